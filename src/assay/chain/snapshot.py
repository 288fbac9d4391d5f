"""A metagraph snapshot file as a chain (`docs/chain.md` gives the format).

Reading returns the file. Setting weights writes the vector into the row of the
validator's own UID (its hotkey is given) and saves the file, so a snapshot is also a
local, air-gapped stand-in for the chain: a preview read afterwards sees the new row.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from assay.chain.identity import address
from assay.chain.interface import Chain
from assay.records.chain import (
    SNAPSHOT_VERSION,
    U16_MAX,
    ChainError,
    Hyperparameters,
    MetagraphSnapshot,
    Neuron,
    SnapshotError,
    UidWeights,
    WeightReceipt,
)

# A subnet of 65536 UIDs, each weighing a few hundred others, fits well inside this.
MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024


def read_snapshot(path: Path) -> MetagraphSnapshot:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SNAPSHOT_BYTES + 1)
    except OSError as exc:
        raise SnapshotError(f"snapshot {path}: {exc.strerror}") from exc
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(f"snapshot {path} is larger than {MAX_SNAPSHOT_BYTES} bytes")
    try:
        return MetagraphSnapshot.from_json(data)
    except SnapshotError as exc:
        raise SnapshotError(f"snapshot {path}: {exc}") from exc


def write_snapshot(snapshot: MetagraphSnapshot, path: Path) -> None:
    """Written whole to a temporary file and renamed, so a reader never sees half a file."""
    problem = snapshot.problem()
    if problem:
        raise SnapshotError(problem)
    current = msgspec.structs.replace(snapshot, version=SNAPSHOT_VERSION)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(msgspec.json.format(current.to_json(), indent=2) + b"\n")
    os.replace(temporary, path)


class SnapshotChain(Chain):
    name = "snapshot"

    def __init__(self, path: Path, hotkey: str | None = None, version_key: int = 0) -> None:
        self.path = path
        self.hotkey = hotkey
        self.version_key = version_key

    def snapshot(self) -> MetagraphSnapshot:
        return read_snapshot(self.path)

    def validator_hotkey(self) -> str | None:
        return self.hotkey

    def set_weights(self, round_id: str, vector: UidWeights) -> WeightReceipt:
        current = self.snapshot()
        uid = current.uid_of(self.hotkey) if self.hotkey else None
        if uid is None:
            raise ChainError(f"hotkey {self.hotkey} is not registered on the snapshot")
        total = sum(vector.weights)
        row = (
            {u: w / total for u, w in zip(vector.uids, vector.weights, strict=True)}
            if total
            else {}
        )
        neurons = tuple(
            msgspec.structs.replace(n, weights=row, last_update=current.block)
            if n.uid == uid
            else n
            for n in current.neurons
        )
        write_snapshot(msgspec.structs.replace(current, neurons=neurons), self.path)
        return vector.receipt(
            round_id,
            current.netuid,
            success=True,
            message=f"written into UID {uid}'s row of {self.path.name}",
            block=current.block,
            commit_reveal=current.hyperparameters.commit_reveal,
        )


def synthetic_snapshot(
    *,
    netuid: int,
    uids: int,
    validators: int,
    register: tuple[str, ...] = (),
    seed: str = "assay",
    block: int = 1000,
) -> MetagraphSnapshot:
    """A made-up subnet, the same for the same arguments: for trying the preview and
    dry runs before a real snapshot is at hand, and for tests.

    UIDs 0..validators-1 are validators (stake 10 000 down to 10 000/validators, a permit,
    and a weights row); `register` takes the next UIDs in order; the rest are miners
    with made-up hotkeys. Each validator's row is a shared merit per miner times its own
    noise, so validators mostly agree, as on a live subnet.
    """
    if validators > uids or validators + len(register) > uids:
        raise SnapshotError(f"{uids} UIDs cannot hold {validators} validators and {register}")
    hotkeys = [_made_up_hotkey(seed, uid) for uid in range(uids)]
    hotkeys[validators : validators + len(register)] = register
    miners = range(validators, uids)
    merit = {m: _unit(seed, "merit", m) ** 2 for m in miners}
    neurons = []
    for uid in range(uids):
        is_validator = uid < validators
        row = (
            {m: merit[m] * (0.5 + _unit(seed, f"noise{uid}", m)) for m in miners}
            if is_validator
            else {}
        )
        total = sum(row.values())
        neurons.append(
            Neuron(
                uid=uid,
                hotkey=hotkeys[uid],
                stake=10_000.0 * (validators - uid) / validators if is_validator else 1.0,
                validator_permit=is_validator,
                last_update=block - 1 - uid % 7,
                weights={m: w / total for m, w in row.items()} if total else {},
            )
        )
    hyper = Hyperparameters(max_weight_limit=U16_MAX, min_allowed_weights=1)
    # The made-up subnet's last epoch, as the chain schedules them, and a made-up hash.
    anchor = block - (block + netuid + 1) % (hyper.tempo + 1)
    anchor_hash = "0x" + hashlib.sha256(f"{seed}:block:{anchor}".encode()).hexdigest()
    return MetagraphSnapshot(
        netuid=netuid,
        block=block,
        neurons=tuple(neurons),
        hyperparameters=hyper,
        anchor_block=anchor,
        block_hash=anchor_hash,
    )


def _unit(seed: str, label: str, uid: int) -> float:
    """A number in [0, 1) fixed by its arguments."""
    digest = hashlib.sha256(f"{seed}:{label}:{uid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _made_up_hotkey(seed: str, uid: int) -> str:
    return address(hashlib.sha256(f"{seed}:hotkey:{uid}".encode()).digest())
