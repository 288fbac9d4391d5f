"""Completed rounds in a real round store, with the manifests that name their agents' hotkeys."""

from __future__ import annotations

import hashlib
from pathlib import Path

from assay.chain.identity import hotkey_of
from assay.mechanism.spec import Track
from assay.records.plan import RoundPlan
from assay.records.scorecard import Scorecard
from assay.schema.manifest import AgentManifest
from assay.store.sqlite import Store


def author(name: str) -> str:
    """An author's ed25519 public key (hex): 32 bytes fixed by the name."""
    return hashlib.sha256(f"author:{name}".encode()).hexdigest()


def hotkey(name: str) -> str:
    found = hotkey_of(author(name))
    assert found is not None
    return found


def agent_hash(name: str, version: int = 1) -> str:
    return hashlib.sha256(f"agent:{name}:{version}".encode()).hexdigest()


def manifest(name: str, version: int = 1, track: Track = Track.SKILLS) -> AgentManifest:
    """The verified manifest a plan keeps (the round verified it at intake)."""
    return AgentManifest(
        format="assay-agent-manifest/1",
        agent_file=f"{name}.py",
        track=track,
        code_sha256=agent_hash(name, version),
        entrypoint="agent_main",
        sandbox_digest="sha256:test",
        author_key=author(name),
        issued_at=f"2026-01-0{version}T00:00:00Z",
        signature="00",
    )


def completed_round(
    db: Path,
    round_id: str,
    signed: dict[tuple[str, int], float],
    unsigned: dict[str, float] | None = None,
) -> None:
    """A completed round whose own weights are `signed` ((author, version) -> weight) and
    `unsigned` (agent hash -> weight, no manifest)."""
    manifests = {agent_hash(n, v): manifest(n, v) for n, v in signed}
    weights = {agent_hash(n, v): w for (n, v), w in signed.items()} | (unsigned or {})
    plan = RoundPlan(
        round_seed="5eed",
        validator_id="local",
        mechanism_version="1",
        mechanism_digest="d",
        corpus="corpus",
        reps={Track.SKILLS: 1},
        tasks=(),
        agents=tuple(sorted(weights)),
        manifests=manifests,
    )
    card = Scorecard(mechanism_version="1", mechanism_digest="d", scores={}, weights=weights)
    with Store(db) as store:
        store.create_round(round_id, plan, [])
        store.finish(round_id, card, weights)
