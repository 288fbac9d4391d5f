"""A completed round's weights on a subnet: per hotkey, blended, conformed, set once.

A round weighs agents (by code hash). On chain, weights go to UIDs and UIDs belong to
hotkeys: an agent's hotkey is its verified manifest's author key (`chain/identity.py`);
an agent without one is dropped as unsigned. The round's own weights are blended per
hotkey and track with the EMA of the last round set on the subnet (α from the
mechanism), so a miner keeps its standing across agent versions; a hotkey whose UID
changed since (deregistered and registered again, or gone) starts afresh. The blend is
conformed to the subnet's limits (`chain/conform.py`) and sent with retries and
backoff; every answer is recorded in the store, and a round whose weights the chain
took is not set again unless forced.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from assay.chain.conform import conform
from assay.chain.identity import hotkey_of, is_address
from assay.chain.interface import Chain
from assay.chain.snapshot import SnapshotChain, read_snapshot, write_snapshot
from assay.mechanism.spec import MechanismSpec
from assay.mechanism.weights import ema
from assay.mechanism.yuma import Disagreement, History, Yuma, disagreements, yuma
from assay.records import codec
from assay.records.chain import (
    U16_MAX,
    ChainError,
    Dropped,
    HotkeyWeight,
    MetagraphSnapshot,
    MinerConsensus,
    SnapshotError,
    UidWeights,
    WeightReceipt,
    YumaPreview,
)
from assay.records.plan import RoundPlan
from assay.schema.manifest import AgentManifest
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store, StoreError
from assay.validator.config import ChainConfig, ConfigError, default_db

if TYPE_CHECKING:
    from bittensor import Wallet

# One hotkey and track in an EMA key: hotkeys are SS58 (no spaces), tracks are names.
_SEP = " "


class AlreadySet(StoreError):
    """The chain took this round's weights already; --force sets them again."""


@dataclass(frozen=True)
class Retry:
    attempts: int = 4
    backoff_s: float = 2.0  # doubled after each failed attempt
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class ChainWeights:
    round_id: str
    netuid: int
    block: int
    vector: UidWeights
    ema: tuple[HotkeyWeight, ...]
    receipt: WeightReceipt | None  # None on a dry run

    def to_json(self) -> dict[str, Any]:
        """Stable keys: `uids`, `weights` (u16), `dropped`, `receipt`, and what they came from."""
        return {
            "round_id": self.round_id,
            "netuid": self.netuid,
            "block": self.block,
            "uids": list(self.vector.uids),
            "weights": list(self.vector.weights),
            "dropped": codec.to_builtins(self.vector.dropped),
            "receipt": codec.to_builtins(self.receipt) if self.receipt else None,
            "hotkeys": self.vector.hotkeys,
            "conformed": list(self.vector.notes),
        }


def set_round_weights(
    round_id: str,
    chain: Chain,
    *,
    db: Path | None = None,
    dry_run: bool = False,
    force: bool = False,
    retry: Retry = Retry(),
) -> ChainWeights:
    """The UID vector of a completed round on the chain's subnet, set unless `dry_run`."""
    spec = pinned()
    with Store(db or default_db(), create=False) as store:
        stored = store.round(round_id)
        if stored.status != "completed":
            raise StoreError(f"round {round_id} is {stored.status}; only a completed one is set")
        snapshot = chain.snapshot()
        if not (dry_run or force) and any(
            r.success for r in store.receipts(round_id, snapshot.netuid)
        ):
            raise AlreadySet(
                f"round {round_id}'s weights are already on subnet {snapshot.netuid}; "
                "--force sets them again"
            )
        previous = store.previous_hotkey_weights(snapshot.netuid, stored.seq)
        slots, agents, unsigned = by_hotkey(
            stored.plan, store.round_weights(round_id), store.round_scores(round_id)
        )
        blended = blend(slots, previous, snapshot, spec)
        vector = conform(
            _per_hotkey(blended),
            snapshot,
            agents=agents,
            previously={p.hotkey: p.uid for p in previous},
            dropped=unsigned,
            validator=_own_uid(chain, snapshot),
            version_key=chain.version_key,
        )
        kept = tuple(
            HotkeyWeight(hotkey=h, track=t, uid=uid, weight=w, registered_at=neuron.registered_at)
            for (h, t), w in sorted(blended.items())
            if (uid := snapshot.uid_of(h)) is not None and (neuron := snapshot.neuron(uid))
        )
        receipt = None
        if not dry_run:
            if not vector.uids:
                raise StoreError(f"round {round_id} has no registered hotkey to set weights for")
            receipt = send(chain, round_id, snapshot, vector, retry)
            store.put_chain_weights(round_id, snapshot.netuid, kept, receipt)
        return ChainWeights(round_id, snapshot.netuid, snapshot.block, vector, kept, receipt)


def _own_uid(chain: Chain, snapshot: MetagraphSnapshot) -> int | None:
    hotkey = chain.validator_hotkey()
    return snapshot.uid_of(hotkey) if hotkey else None


def by_hotkey(
    plan: RoundPlan,
    round_weights: Mapping[str, float],
    scores: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[dict[tuple[str, str], float], dict[str, list[str]], list[Dropped]]:
    """The round's weights per (hotkey, track), the agents behind each hotkey, and the
    weight of agents no hotkey owns. An agent entered on several tracks by its owner
    splits its weight among them in proportion to its score on each (`scores`, track ->
    agent -> score)."""
    slots: dict[tuple[str, str], float] = {}
    agents: dict[str, list[str]] = {}
    unsigned: list[Dropped] = []
    for agent_hash in sorted(round_weights):
        manifest = plan.manifests.get(agent_hash)
        hotkey = hotkey_of(manifest.author_key) if manifest else None
        weight = round_weights[agent_hash]
        if manifest is None or hotkey is None:
            unsigned.append(
                Dropped(hotkey=None, agents=(agent_hash,), weight=weight, reason="unsigned")
            )
            continue
        tracks = sorted(plan.entries.get(agent_hash, {})) or [manifest.track.value]
        for track, share in _track_shares(agent_hash, tracks, scores or {}).items():
            slots[(hotkey, track)] = slots.get((hotkey, track), 0.0) + weight * share
        agents.setdefault(hotkey, []).append(agent_hash)
    return slots, agents, unsigned


def _track_shares(
    agent_hash: str, tracks: list[str], scores: Mapping[str, Mapping[str, float]]
) -> dict[str, float]:
    points = {t: max(scores.get(t, {}).get(agent_hash, 0.0), 0.0) for t in tracks}
    total = math.fsum(points.values())
    if total <= 0:
        return {t: 1.0 / len(tracks) for t in tracks}
    return {t: p / total for t, p in points.items()}


def blend(
    slots: Mapping[tuple[str, str], float],
    previous: list[HotkeyWeight],
    snapshot: MetagraphSnapshot,
    spec: MechanismSpec,
) -> dict[tuple[str, str], float]:
    """The EMA per (hotkey, track): a previous entry counts only while its hotkey still
    holds the same UID from the same registration; a UID that changed owner, a hotkey
    that moved, or one deregistered and registered again at its UID starts afresh."""
    carried = {
        f"{p.hotkey}{_SEP}{p.track}": p.weight for p in previous if _same_registration(p, snapshot)
    }
    new = {f"{h}{_SEP}{t}": w for (h, t), w in slots.items()}
    blended = ema(new, carried, spec=spec)
    return {_slot(key): w for key, w in blended.items()}


def _same_registration(previous: HotkeyWeight, snapshot: MetagraphSnapshot) -> bool:
    uid = snapshot.uid_of(previous.hotkey)
    neuron = snapshot.neuron(uid) if uid == previous.uid and uid is not None else None
    if neuron is None:
        return False
    # 0 is "not known" (a version 1 snapshot): the UID alone then decides.
    known = previous.registered_at and neuron.registered_at
    return not known or previous.registered_at == neuron.registered_at


def _slot(key: str) -> tuple[str, str]:
    hotkey, track = key.split(_SEP, 1)
    return hotkey, track


def _per_hotkey(blended: Mapping[tuple[str, str], float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for (hotkey, _), weight in blended.items():
        out[hotkey] = out.get(hotkey, 0.0) + weight
    return out


def send(
    chain: Chain, round_id: str, snapshot: MetagraphSnapshot, vector: UidWeights, retry: Retry
) -> WeightReceipt:
    """Set the vector, retrying a chain that fails with a doubling pause; a vector the
    chain never took gives a failed receipt naming the last error."""
    failure = ""
    for attempt in range(1, retry.attempts + 1):
        try:
            receipt = chain.set_weights(round_id, vector)
        except ChainError as exc:
            failure = str(exc)
            if attempt < retry.attempts:
                retry.sleep(retry.backoff_s * 2 ** (attempt - 1))
            continue
        return msgspec.structs.replace(receipt, attempts=attempt)
    return vector.receipt(
        round_id,
        snapshot.netuid,
        success=False,
        message=f"not set after {retry.attempts} attempts: {failure}",
        attempts=retry.attempts,
        block=snapshot.block,
    )


def open_chain(config: ChainConfig, hotkey: str | None = None) -> Chain:
    """The snapshot file when the config names one, else the live chain through the SDK.
    A snapshot sets weights into the row of `hotkey` (default: `[chain] hotkey` when it
    is an address)."""
    if config.snapshot is not None:
        address = config.hotkey if is_address(config.hotkey) else None
        return SnapshotChain(config.snapshot, hotkey or address, config.version_key)
    if config.netuid is None:
        raise ConfigError("no subnet: give --netuid (or netuid in [chain]) or --snapshot")
    from assay.chain.bittensor import BittensorChain

    return BittensorChain(
        network=config.network,
        netuid=config.netuid,
        wallet=_wallet(config),
        version_key=config.version_key,
    )


def wallet_path(config: ChainConfig) -> Path | None:
    """The wallets' folder: `[chain] wallet_path`, else BT_WALLET_PATH as btcli reads it,
    else (None) the SDK's default."""
    if config.wallet_path is not None:
        return config.wallet_path
    from_env = os.environ.get("BT_WALLET_PATH")
    return Path(from_env).expanduser() if from_env else None


def _wallet(config: ChainConfig) -> Wallet:
    from bittensor import Wallet

    folder = wallet_path(config)
    path = {"path": str(folder)} if folder else {}
    return Wallet(name=config.wallet, hotkey=config.hotkey, **path)


def hotkey_address(config: ChainConfig) -> str:
    """This validator's hotkey address: `[chain] hotkey` when it is one, else the public
    hotkey of `[chain] wallet`/`hotkey` in the wallets' folder (never unlocked)."""
    if is_address(config.hotkey):
        return config.hotkey
    from bittensor import public_view

    try:
        return str(public_view(_wallet(config), "hotkey").ss58_address)
    except Exception as exc:  # the SDK's keyfile errors share no base class but Exception
        folder = wallet_path(config) or "the default wallets folder"
        raise ConfigError(
            f"cannot read hotkey {config.hotkey!r} of wallet {config.wallet!r} in {folder}: {exc}"
        ) from exc


def validator_address(config: ChainConfig) -> str | None:
    """This validator's hotkey address: the one a miner's request must be addressed to.
    None for a snapshot given no address and no readable wallet hotkey."""
    if config.snapshot is None or is_address(config.hotkey):
        return hotkey_address(config)
    try:
        return hotkey_address(config)
    except ConfigError:
        return None


def registered_as(chain: Chain, hotkey: str) -> int:
    """The UID the subnet gives `hotkey`; a ConfigError (never retried) when it has none."""
    snapshot = chain.snapshot()
    uid = snapshot.uid_of(hotkey)
    if uid is None:
        raise ConfigError(
            f"hotkey {hotkey} is not registered on subnet {snapshot.netuid} at block "
            f"{snapshot.block}: register it, or name another in [chain] wallet/hotkey"
        )
    return uid


@dataclass(frozen=True)
class Preview:
    """Yuma on a snapshot with one validator's row replaced by the weights it would set."""

    uid: int
    netuid: int
    block: int
    permit: bool
    row: dict[int, float]
    result: Yuma
    disagreements: tuple[Disagreement, ...]

    def to_json(self) -> dict[str, Any]:
        r = self.result
        return {
            "as": self.uid,
            "netuid": self.netuid,
            "block": self.block,
            "validator_permit": self.permit,
            "row": self.row,
            "vtrust": r.vtrust,
            "incentive": r.incentive,
            "consensus": r.consensus,
            "disagreements": [vars(d) for d in self.disagreements],
        }

    def record(self) -> YumaPreview:
        """The preview as the HTML report renders it."""
        r = self.result

        def miner(uid: int) -> MinerConsensus:
            return MinerConsensus(
                uid=uid,
                weight=self.row.get(uid, 0.0),
                consensus=r.consensus.get(uid, 0.0),
                incentive=r.incentive.get(uid, 0.0),
            )

        return YumaPreview(
            uid=self.uid,
            netuid=self.netuid,
            block=self.block,
            validator_permit=self.permit,
            vtrust=r.vtrust.get(self.uid, 0.0),
            miners=tuple(
                miner(m) for m in sorted(r.consensus, key=lambda m: (-r.incentive.get(m, 0.0), m))
            ),
            disagreements=tuple(miner(d.miner) for d in self.disagreements),
        )


def preview(snapshot: MetagraphSnapshot, uid: int, row: Mapping[int, float]) -> Preview:
    """`assay chain preview`: what the subnet's consensus makes of `row` set by `uid`."""
    neuron = snapshot.neuron(uid)
    if neuron is None:
        raise SnapshotError(f"UID {uid} is not on the snapshot")
    unknown = sorted(set(row) - {n.uid for n in snapshot.neurons})
    if unknown:
        raise SnapshotError(f"the weights name UIDs the snapshot does not hold: {unknown}")
    owner = snapshot.owner_uid
    # The chain gives the subnet owner a validator permit whatever its stake.
    stake = {n.uid: n.stake for n in snapshot.neurons if n.validator_permit or n.uid == owner}
    weights = {n.uid: n.weights for n in snapshot.neurons} | {uid: dict(row)}
    # The previewed row is set now: its last update is the snapshot's block.
    history = History(
        last_update={n.uid: n.last_update for n in snapshot.neurons} | {uid: snapshot.block},
        registered_at={n.uid: n.registered_at for n in snapshot.neurons},
    )
    kappa = snapshot.hyperparameters.kappa / U16_MAX
    result = yuma(stake, weights, kappa=kappa, owner=owner, history=history)
    return Preview(
        uid=uid,
        netuid=snapshot.netuid,
        block=snapshot.block,
        permit=neuron.validator_permit,
        row=result.weights.get(uid, {}),
        result=result,
        disagreements=tuple(disagreements(result, uid)),
    )


def row_of(vector: UidWeights) -> dict[int, float]:
    """The UID vector as the fractions the chain's epoch reads."""
    total = sum(vector.weights)
    return {u: w / total for u, w in zip(vector.uids, vector.weights, strict=True)} if total else {}


def read_weights_file(path: Path) -> dict[int, float]:
    """A JSON object from UID to weight (any scale)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"weights file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"weights file {path}: not a JSON object from UID to weight")
    out: dict[int, float] = {}
    for key, value in data.items():
        if not key.isdigit() or isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"weights file {path}: {key!r}: {value!r} is not UID: weight")
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"weights file {path}: UID {key} has weight {value}")
        out[int(key)] = float(value)
    return out


def save_snapshot(config: ChainConfig, out: Path) -> MetagraphSnapshot:
    """`assay chain snapshot`: the subnet now, written to `out`."""
    snapshot = open_chain(config).snapshot()
    write_snapshot(snapshot, out)
    return snapshot


def preview_file(
    snapshot_path: Path,
    uid: int,
    *,
    round_id: str | None = None,
    weights_file: Path | None = None,
    db: Path | None = None,
) -> Preview:
    """`assay chain preview`: the row is a round's UID vector (as `chain weights --dry-run`
    makes it against this snapshot) or a weights file's, else the UID's row as it stands."""
    if round_id is not None and weights_file is not None:
        raise ConfigError("give --weights ROUND_ID or --weights-file FILE, not both")
    snapshot = read_snapshot(snapshot_path)
    neuron = snapshot.neuron(uid)
    if round_id is not None:
        chain = SnapshotChain(snapshot_path)
        row = row_of(set_round_weights(round_id, chain, db=db, dry_run=True).vector)
    elif weights_file is not None:
        row = read_weights_file(weights_file)
    else:
        row = dict(neuron.weights) if neuron else {}
    return preview(snapshot, uid, row)


def round_preview(
    round_id: str, chain: ChainConfig, uid: int | None = None, *, db: Path | None = None
) -> YumaPreview | None:
    """The HTML report's consensus section: the preview of a round's weights on the
    configured snapshot as `uid` (by default the UID of the `[chain]` hotkey's address);
    None when no snapshot is configured."""
    if chain.snapshot is None:
        return None
    if uid is None:
        address = validator_address(chain)
        uid = read_snapshot(chain.snapshot).uid_of(address) if address else None
        if uid is None:
            raise ConfigError(
                f"which validator's view of {chain.snapshot}? give --as UID "
                "(or [chain] hotkey as an address registered on it)"
            )
    return preview_file(chain.snapshot, uid, round_id=round_id, db=db).record()


def registered_on(snapshot: MetagraphSnapshot) -> Callable[[AgentManifest], str | None]:
    """The intake's check on a subnet: why a manifest's author holds no UID, or None."""

    def refusal(manifest: AgentManifest) -> str | None:
        hotkey = hotkey_of(manifest.author_key)
        if hotkey is not None and snapshot.uid_of(hotkey) is not None:
            return None
        return (
            f"hotkey {hotkey or manifest.author_key} is not registered on subnet "
            f"{snapshot.netuid} at block {snapshot.block}"
        )

    return refusal
