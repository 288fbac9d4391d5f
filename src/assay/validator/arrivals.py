"""Admission by first arrival: the store's record of when the validator first saw each
owner's code and which owner first carried each normalised form (`attest/intake.py`).

The drop folder's files get the arrival of their content: the first time the validator
saw that owner's code, wherever it came from (the HTTP intake records it as it accepts
a submission; files an operator puts in the drop are recorded at the next cycle, in the
order they were written). A file's name never orders anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from assay.attest.intake import OwnerCheck, door, read_submission
from assay.attest.manifest import MANIFEST_SUFFIX, ManifestError
from assay.mechanism.spec import MechanismSpec, Track
from assay.records.agent import AgentError
from assay.store.sqlite import Store


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class StoreArrivals:
    """`attest.intake.Arrivals` kept in the round store."""

    def __init__(self, store: Store, clock: Callable[[], str] = _now) -> None:
        self.store = store
        self.clock = clock

    def arrival(self, owner: str, code_sha256: str) -> int:
        return self.store.arrival(owner, code_sha256, self.clock())

    def claim(self, digest: str, owner: str, arrival: int) -> str:
        return self.store.claim_fingerprint(digest, owner, arrival, self.clock())


def drop_manifests(drop: Path) -> tuple[Path, ...]:
    """The drop folder's manifests in the order they were written (mtime, then name)."""
    paths = []
    for path in drop.glob(f"*{MANIFEST_SUFFIX}"):
        try:
            paths.append((path.stat().st_mtime_ns, path.name, path))
        except OSError:
            continue  # replaced while listed: the next cycle sees its successor
    return tuple(p for *_, p in sorted(paths))


def record_drop(
    db: Path,
    manifests: Sequence[Path],
    tracks: Sequence[Track],
    spec: MechanismSpec,
    unregistered: OwnerCheck | None,
) -> None:
    """Record the arrival of every submission in `manifests` that passes the door, in
    the order given; unreadable ones wait for the round's admission to refuse them."""
    with Store(db) as store:
        arrivals = StoreArrivals(store)
        for path in manifests:
            try:
                sub = read_submission(path)
            except (ManifestError, AgentError):
                continue
            if sub.manifest and door(sub, tracks, spec, unregistered) is None:
                arrivals.arrival(sub.owner, sub.agent.agent_hash)
