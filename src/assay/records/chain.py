"""A subnet as the validator sees it: the metagraph snapshot, the UID vector it sets, the receipt.

The snapshot is also a file format (`docs/chain.md`): a versioned JSON object that
`assay chain snapshot` writes from the chain and that dry runs, tests, air-gapped
validators and the consensus preview read. Weights in a snapshot are each validator's
row as fractions of its own total (the chain stores max-upscaled u16 values whose scale
carries no meaning).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from assay.records import codec

SNAPSHOT_VERSION = 1
U16_MAX = 65535

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


class Hyperparameters(msgspec.Struct, frozen=True, kw_only=True):
    """The subnet's limits on a weight vector; the defaults are the chain's unrestricted ones."""

    max_weight_limit: Uid = U16_MAX  # u16: the largest share one UID may get, of 65535
    min_allowed_weights: Count = 0
    commit_reveal: bool = False
    weights_rate_limit: Count = 0  # blocks between two sets by one validator
    tempo: Count = 360


class MetagraphSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    version: int = SNAPSHOT_VERSION
    netuid: Uid
    block: Count
    neurons: tuple[Neuron, ...]
    hyperparameters: Hyperparameters = Hyperparameters()

    def uid_of(self, hotkey: str) -> int | None:
        return next((n.uid for n in self.neurons if n.hotkey == hotkey), None)

    def neuron(self, uid: int) -> Neuron | None:
        return next((n for n in self.neurons if n.uid == uid), None)

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
        if self.version != SNAPSHOT_VERSION:
            return f"snapshot version {self.version}; this assay reads version {SNAPSHOT_VERSION}"
        uids = [n.uid for n in self.neurons]
        if len(set(uids)) != len(uids):
            return "a UID appears twice among the neurons"
        hotkeys = [n.hotkey for n in self.neurons]
        if len(set(hotkeys)) != len(hotkeys):
            return "a hotkey holds two UIDs"
        for n in self.neurons:
            if n.stake < 0 or any(w < 0 for w in n.weights.values()):
                return f"UID {n.uid} has a negative stake or weight"
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
    """One hotkey's EMA-blended weight on one track, and the UID it held when blended."""

    hotkey: str
    track: str
    uid: int
    weight: float


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
