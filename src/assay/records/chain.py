"""A subnet as the validator sees it: the metagraph snapshot, the UID vector it sets, the receipt.

The snapshot is also a file format (`docs/chain.md`): a versioned JSON object that
`assay chain snapshot` writes from the chain and that dry runs, tests, air-gapped
validators and the consensus preview read. Weights in a snapshot are each validator's
row as fractions of its own total (the chain stores max-upscaled u16 values whose scale
carries no meaning).

Version 2 adds what a shared draw and the chain's own epoch read: the anchor block (the
block of the subnet's last epoch, where its current tempo begins) and its hash, each
neuron's registration block, the subnet owner's hotkey, Kappa and the weights version
key. A version 1 file is still read (those fields take their defaults) and is written
back as version 2. Stakes and weights are bounded (`MAX_STAKE`, `MAX_WEIGHT`): a file
past them is refused naming the field, before any sum could overflow.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from assay.records import codec

SNAPSHOT_VERSION = 2
READABLE_VERSIONS = (1, 2)
U16_MAX = 65535
# The chain's default Kappa (u16): the share of stake whose weight a miner's consensus is.
KAPPA_DEFAULT = 32767
# Bounds of a snapshot's numbers. A subnet's whole alpha supply is 21 million per subnet
# (TAO's own cap), so no stake comes near 1e15; a row is fractions of its total (or the
# chain's u16 values), so no weight exceeds 65535. Anything past them is a hostile or
# broken file, refused before a sum over it could overflow.
MAX_STAKE = 1e15
MAX_WEIGHT = float(U16_MAX)

Uid = Annotated[int, Meta(ge=0, le=U16_MAX)]
Count = Annotated[int, Meta(ge=0)]


class ChainError(RuntimeError):
    """The chain could not be read or would not take the weights (retryable)."""


class SnapshotError(ValueError):
    """A snapshot file that cannot be read or holds an impossible metagraph."""


class Neuron(msgspec.Struct, frozen=True, kw_only=True):
    uid: Uid
    hotkey: Annotated[str, Meta(min_length=1, max_length=128)]
    stake: float
    validator_permit: bool = False
    last_update: Count = 0
    weights: dict[Uid, float] = {}  # miner uid -> fraction of this validator's row
    # The block the hotkey registered at this UID (0: unknown, a version 1 file). A change
    # means the UID was freed and taken again: its weight history starts afresh.
    registered_at: Count = 0

    def problem(self) -> str | None:
        """Why this neuron's numbers cannot be a subnet's, naming the field."""
        if self.stake < 0:
            return f"UID {self.uid} has a negative stake ({self.stake:g})"
        if not math.isfinite(self.stake) or self.stake > MAX_STAKE:
            return f"UID {self.uid}: stake {self.stake:g} is above the maximum {MAX_STAKE:g}"
        for miner, weight in self.weights.items():
            if weight < 0:
                return f"UID {self.uid} has a negative weight on UID {miner}"
            if not math.isfinite(weight) or weight > MAX_WEIGHT:
                return (
                    f"UID {self.uid}: weight {weight:g} on UID {miner} is above the "
                    f"maximum {MAX_WEIGHT:g}"
                )
        return None


class Hyperparameters(msgspec.Struct, frozen=True, kw_only=True):
    """The subnet's limits on a weight vector; the defaults are the chain's unrestricted ones."""

    max_weight_limit: Uid = U16_MAX  # u16: the largest share one UID may get, of 65535
    min_allowed_weights: Count = 0
    commit_reveal: bool = False
    weights_rate_limit: Count = 0  # blocks between two sets by one validator
    tempo: Count = 360
    kappa: Uid = KAPPA_DEFAULT  # u16: the stake share consensus is the weight of
    version_key: Count = 0  # the subnet's WeightsVersionKey: a validator's must be at least it


class MetagraphSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    version: int = SNAPSHOT_VERSION
    netuid: Uid
    block: Count
    neurons: tuple[Neuron, ...]
    hyperparameters: Hyperparameters = Hyperparameters()
    # The block of the subnet's last epoch (its current tempo begins there) and that
    # block's hash: a chain-mode round's seed, the same for every validator this tempo.
    anchor_block: Count | None = None
    block_hash: Annotated[str, Meta(pattern="^0x[0-9a-fA-F]{64}$")] | None = None
    owner_hotkey: Annotated[str, Meta(max_length=128)] | None = None

    def uid_of(self, hotkey: str) -> int | None:
        return next((n.uid for n in self.neurons if n.hotkey == hotkey), None)

    def neuron(self, uid: int) -> Neuron | None:
        return next((n for n in self.neurons if n.uid == uid), None)

    @property
    def owner_uid(self) -> int | None:
        """The UID of the subnet owner's hotkey, when it holds one."""
        return self.uid_of(self.owner_hotkey) if self.owner_hotkey else None

    def to_json(self) -> bytes:
        return codec.encode(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> MetagraphSnapshot:
        try:
            snapshot = codec.decode(data, cls)
        except codec.DecodeError as exc:
            raise SnapshotError(f"not a metagraph snapshot: {exc}") from exc
        problem = snapshot.problem()
        if problem:
            raise SnapshotError(problem)
        return snapshot

    def problem(self) -> str | None:
        """Why this snapshot cannot be a subnet's metagraph, if it cannot."""
        if self.version not in READABLE_VERSIONS:
            readable = " and ".join(map(str, READABLE_VERSIONS))
            return f"snapshot version {self.version}; this assay reads versions {readable}"
        if (self.anchor_block is None) != (self.block_hash is None):
            return "anchor_block and block_hash come together (or neither is given)"
        if self.anchor_block is not None and self.anchor_block > self.block:
            return f"anchor_block {self.anchor_block} is after the snapshot's block {self.block}"
        uids = [n.uid for n in self.neurons]
        if len(set(uids)) != len(uids):
            return "a UID appears twice among the neurons"
        hotkeys = [n.hotkey for n in self.neurons]
        if len(set(hotkeys)) != len(hotkeys):
            return "a hotkey holds two UIDs"
        for n in self.neurons:
            problem = n.problem()
            if problem:
                return problem
            if not set(n.weights) <= set(uids):
                return f"UID {n.uid} weighs a UID that is not in the snapshot"
        return None


class Dropped(msgspec.Struct, frozen=True, kw_only=True):
    """A weight that does not reach the chain, and why."""

    hotkey: str | None  # None for an agent that no hotkey owns
    agents: tuple[str, ...]  # agent hashes behind it
    weight: float
    reason: str  # unsigned, unregistered, deregistered, below quantum


class UidWeights(msgspec.Struct, frozen=True, kw_only=True):
    """The vector the chain takes: UIDs ascending, u16 values max-upscaled."""

    uids: tuple[int, ...]
    weights: tuple[int, ...]
    dropped: tuple[Dropped, ...] = ()
    hotkeys: dict[str, float] = {}  # the per-hotkey weights it was made from (after EMA)
    # How the vector was made to fit the subnet's limits (clipped, spread), for the dry run.
    notes: tuple[str, ...] = ()

    def receipt(
        self, round_id: str, netuid: int, *, success: bool, message: str, **details: Any
    ) -> WeightReceipt:
        """The chain's answer to this vector; `details` are the receipt's other fields."""
        return WeightReceipt(
            round_id=round_id,
            netuid=netuid,
            uids=self.uids,
            weights=self.weights,
            success=success,
            message=message,
            **details,
        )


class HotkeyWeight(msgspec.Struct, frozen=True, kw_only=True):
    """One hotkey's EMA-blended weight on one track, and the UID it held when blended
    (with the block it registered there; 0 when the snapshot did not say)."""

    hotkey: str
    track: str
    uid: int
    weight: float
    registered_at: int = 0


class WeightReceipt(msgspec.Struct, frozen=True, kw_only=True):
    """What the chain answered when a validator set a round's weights."""

    round_id: str
    netuid: int
    uids: tuple[int, ...]
    weights: tuple[int, ...]
    success: bool
    message: str
    attempts: int = 1
    block: int | None = None  # the chain's block when the weights were sent
    block_hash: str | None = None
    extrinsic_id: str | None = None
    commit_reveal: bool = False
    reveal_round: int | None = None  # the drand round a timelocked commit opens at


class MinerConsensus(msgspec.Struct, frozen=True, kw_only=True):
    """One miner in a consensus preview, as the report shows it."""

    uid: Uid
    weight: float  # the previewed validator's normalised weight on the miner
    consensus: float
    incentive: float


class YumaPreview(msgspec.Struct, frozen=True, kw_only=True):
    """Yuma on a snapshot with one validator's row replaced by a round's UID vector:
    the validator's vtrust, each miner's consensus and incentive, and the miners where
    the row is farthest from consensus (farthest first)."""

    uid: Uid
    netuid: Count
    block: Count
    validator_permit: bool
    vtrust: float
    miners: tuple[MinerConsensus, ...]  # highest incentive first
    disagreements: tuple[MinerConsensus, ...]
