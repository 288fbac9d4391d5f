"""Which submitted agents a round admits, and why the others score 0.

Agents arrive in intake order (the order given on the command line, which an
operator keeps as the order submissions arrived): plain agent files (for
development) and signed manifests. Every agent is pinned into the round; an
agent refused here stays in it, but its reps on a refused track fail without
running (reason `agent_invalid`, with the detail recorded), so it scores 0 and
the report says why. Refused, per track:

- a manifest whose signature or code hash does not verify: every track;
- a manifest agent on any track other than the one it was pinned for;
- one active agent per author key per track: among verified manifests of one
  key and track, the latest `issued_at` wins (ties: the later submitted) and
  the others are refused as superseded;
- a near-copy of an earlier submission (copy screening, `screening.py`):
  every track, naming the original and the similarity;
- on a subnet, a manifest whose author key (a miner's hotkey) the round's metagraph
  snapshot does not register: every track, naming the subnet and block (the
  validator passes the check as `unregistered`).

Byte-identical code is one agent (agents are identified by hash), so a second
submission of the same bytes is dropped with a note and the first one kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assay.attest.manifest import ManifestError, read_manifest, verify_manifest
from assay.attest.screening import Entry, screen
from assay.mechanism.spec import MechanismSpec, Track
from assay.records.agent import Agent, short_hash
from assay.schema.manifest import AgentManifest


@dataclass(frozen=True)
class Submission:
    agent: Agent
    manifest: AgentManifest | None = None
    problem: str | None = None  # why the manifest does not verify

    @property
    def verified(self) -> AgentManifest | None:
        return self.manifest if self.problem is None else None

    @property
    def label(self) -> str:
        return f"{self.agent.name} ({short_hash(self.agent.agent_hash)})"


@dataclass(frozen=True)
class Admission:
    agents: tuple[Agent, ...]
    refused: dict[str, dict[str, str]] = field(default_factory=dict)  # hash -> track -> why
    manifests: dict[str, AgentManifest] = field(default_factory=dict)  # hash -> verified one
    notes: tuple[str, ...] = ()

    def requested_model(self, agent_hash: str) -> str | None:
        """The model the agent's verified manifest asks the round to serve, if any."""
        manifest = self.manifests.get(agent_hash)
        return manifest.model if manifest else None


def read_submission(manifest_path: Path) -> Submission:
    """The agent a manifest names, with the manifest's verification problem if any."""
    manifest = read_manifest(manifest_path)
    agent = Agent.load(manifest.agent_path(manifest_path), manifest.entrypoint)
    try:
        verify_manifest(manifest, agent.code)
    except ManifestError as exc:
        return Submission(agent, manifest, f"manifest {manifest_path.name}: {exc}")
    return Submission(agent, manifest)


def _without_duplicates(subs: Sequence[Submission]) -> tuple[list[Submission], list[str]]:
    kept: dict[str, Submission] = {}
    notes = []
    for sub in subs:
        first = kept.setdefault(sub.agent.agent_hash, sub)
        if first is not sub:
            notes.append(f"{sub.agent.name}: same code as {first.label}, submitted first; dropped")
    return list(kept.values()), notes


def _superseded(subs: Sequence[Submission]) -> dict[str, str]:
    """Agent hash -> why, for every verified manifest that a later one of its key+track replaces."""
    winners: dict[tuple[str, Track], tuple[tuple[str, int], Submission]] = {}
    for order, sub in enumerate(subs):
        if sub.verified:
            key, rank = sub.verified.slot, (sub.verified.issued_at, order)
            if key not in winners or rank > winners[key][0]:
                winners[key] = (rank, sub)
    out = {}
    for sub in subs:
        if sub.verified and (winner := winners[sub.verified.slot][1]) is not sub:
            out[sub.agent.agent_hash] = (
                f"superseded by {winner.label}, a later manifest of the same author key "
                f"for {sub.verified.track.value}"
            )
    return out


# Why a verified manifest's author may not submit here (None: it may).
OwnerCheck = Callable[[AgentManifest], str | None]


def _refusals(
    sub: Submission, track: Track, superseded: dict[str, str], unregistered: OwnerCheck | None
) -> str | None:
    if sub.problem:
        return sub.problem
    if sub.manifest and unregistered and (why := unregistered(sub.manifest)):
        return why
    if sub.manifest and sub.manifest.track is not track:
        return f"pinned for track {sub.manifest.track.value}, not {track.value}"
    return superseded.get(sub.agent.agent_hash)


def admit(
    submissions: Sequence[Submission],
    tracks: Sequence[Track],
    spec: MechanismSpec,
    unregistered: OwnerCheck | None = None,
) -> Admission:
    subs, notes = _without_duplicates(submissions)
    superseded = _superseded(subs)
    copies = {
        flag.copy: flag.describe()
        for flag in screen([Entry(s.label, s.agent.code) for s in subs], spec.copy_similarity)
    }
    refused: dict[str, dict[str, str]] = {}
    for sub in subs:
        for track in tracks:
            reason = copies.get(sub.label) or _refusals(sub, track, superseded, unregistered)
            if reason:
                refused.setdefault(sub.agent.agent_hash, {})[track.value] = reason
    return Admission(
        agents=tuple(s.agent for s in subs),
        refused=refused,
        manifests={s.agent.agent_hash: s.verified for s in subs if s.verified},
        notes=tuple(notes),
    )


def admit_files(
    agent_files: Sequence[Path],
    manifest_files: Sequence[Path],
    tracks: Sequence[Track],
    spec: MechanismSpec,
    unregistered: OwnerCheck | None = None,
) -> Admission:
    """Intake order: plain agent files first, then manifests, each in the order given."""
    submissions = [Submission(Agent.load(p)) for p in agent_files]
    submissions += [read_submission(m) for m in manifest_files]
    return admit(submissions, tracks, spec, unregistered)
