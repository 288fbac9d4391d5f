"""Which submitted agents a round admits, and why the others score 0.

A submission is one agent for one track from one owner (a miner's hotkey or an
author's key; a plain agent file, for development, enters every track as its own
owner). Its identity is (owner, track): one owner may enter the same code on several
tracks, and a newer submission replaces the older one of its track only. Every agent
is pinned into the round by its code hash; an agent refused here stays in it, but its
reps on a refused track fail without running (reason `agent_invalid`, with the detail
recorded), so it scores 0 and the report says why.

The checks run in this order, and a submission refused by one never reaches the next,
so a refused submission can never make another one a copy:

1. the door, which does not read the code: a manifest whose signature or code hash
   does not verify; on a subnet, an owner the round's metagraph snapshot does not
   register (the validator passes the check as `unregistered`); code over the
   mechanism's agent code cap; a track the round does not run;
2. arrival: what is left is ordered by when the validator first saw each owner's code
   (`Arrivals`: the store's record, kept across restarts), never by names;
3. one active submission per owner and track: the latest `issued_at` wins (ties: the
   later arrival), the others are refused as superseded;
4. screening (`screening.py`): code that builds code from data, or that the screener
   cannot read, is refused; so is code whose normalised form an earlier arrival of
   another owner carried first (the store remembers every normalised form it admitted,
   so an original that has left the drop still counts), and code that contains most of
   an earlier arrival of another owner in this round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from assay.attest.manifest import ManifestError, read_manifest, verify_manifest
from assay.attest.screening import Entry, Fingerprint, Unscreenable, fingerprint, screen
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

    @property
    def owner(self) -> str:
        """Who screening protects: the manifest's key, or the plain file itself."""
        return self.manifest.author_key if self.manifest else f"file {self.agent.name}"

    def enters(self, track: Track) -> bool:
        return self.manifest is None or self.manifest.track is track


class Arrivals(Protocol):
    """When the validator first saw things, in an order that survives restarts."""

    def arrival(self, owner: str, code_sha256: str) -> int:
        """The rank of the first time `owner` submitted this code (recorded now if never)."""
        ...

    def claim(self, digest: str, owner: str, arrival: int) -> str:
        """The owner of a normalised form: the earliest arrival that carried it."""
        ...


class InMemoryArrivals:
    """Arrivals for one admission only: the order submissions are given in."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], int] = {}
        self.owners: dict[str, tuple[int, str]] = {}

    def arrival(self, owner: str, code_sha256: str) -> int:
        return self.seen.setdefault((owner, code_sha256), len(self.seen))

    def claim(self, digest: str, owner: str, arrival: int) -> str:
        held = self.owners.get(digest)
        if held is None or arrival < held[0]:
            self.owners[digest] = held = (arrival, owner)
        return held[1]


@dataclass(frozen=True)
class Admission:
    agents: tuple[Agent, ...]  # in arrival order
    refused: dict[str, dict[str, str]] = field(default_factory=dict)  # hash -> track -> why
    manifests: dict[str, AgentManifest] = field(default_factory=dict)  # hash -> verified one
    # hash -> track -> the admitted manifest entering it (one agent on several tracks)
    entries: dict[str, dict[str, AgentManifest]] = field(default_factory=dict)
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


# Why a verified manifest's author may not submit here (None: it may).
OwnerCheck = Callable[[AgentManifest], str | None]


def door(
    sub: Submission,
    tracks: Sequence[Track],
    spec: MechanismSpec,
    unregistered: OwnerCheck | None = None,
) -> str | None:
    """Why the submission is refused before its code is read, or None."""
    if sub.problem:
        return sub.problem
    if sub.manifest and unregistered and (why := unregistered(sub.manifest)):
        return why
    cap = spec.sandbox.agent_code_bytes
    if len(sub.agent.code) > cap:
        return f"the agent file is {len(sub.agent.code)} bytes, over the {cap}-byte code cap"
    if sub.manifest and sub.manifest.track not in tracks:
        return f"pinned for track {sub.manifest.track.value}, which this round does not run"
    return None


def _superseded(subs: Sequence[Submission], ranked: Sequence[int]) -> dict[int, str]:
    """Submission -> why, for every verified manifest a later one of its owner+track
    replaces."""
    winners: dict[tuple[str, Track], tuple[tuple[str, int], int]] = {}
    for position, i in enumerate(ranked):
        manifest = subs[i].verified
        if manifest:
            rank = (manifest.issued_at, position)
            if manifest.slot not in winners or rank > winners[manifest.slot][0]:
                winners[manifest.slot] = (rank, i)
    out = {}
    for i in ranked:
        manifest = subs[i].verified
        if manifest and (winner := winners[manifest.slot][1]) != i:
            out[i] = (
                f"superseded by {subs[winner].label}, a later manifest of the same author key "
                f"for {manifest.track.value}"
            )
    return out


class _Screening:
    """Step 4 over the submissions left, in arrival order."""

    def __init__(self, subs: Sequence[Submission], arrivals: Arrivals) -> None:
        self.subs = subs
        self.arrivals = arrivals

    def refusals(
        self, ranked: Sequence[int], order: dict[int, int], threshold: float
    ) -> dict[int, str]:
        out: dict[int, str] = {}
        prints: dict[int, Fingerprint] = {}
        carriers: dict[tuple[str, str], str] = {}  # (digest, owner) -> its label here
        for i in ranked:
            sub = self.subs[i]
            try:
                prints[i] = fingerprint(sub.agent.code)
            except Unscreenable as exc:
                out[i] = str(exc)
                continue
            digest = prints[i].digest
            carriers.setdefault((digest, sub.owner), sub.label)
            owner = self.arrivals.claim(digest, sub.owner, order[i])
            if owner != sub.owner:
                original = carriers.get((digest, owner), f"an agent of {owner}")
                out[i] = (
                    f"copy screening: the same code, once normalised, as {original}, "
                    "which arrived first"
                )
        kept = [i for i in ranked if i not in out]
        firsts: dict[
            str, int
        ] = {}  # one entry per code: an owner's same code on several tracks is one agent
        for i in kept:
            firsts.setdefault(self.subs[i].agent.agent_hash, i)
        entries = [
            Entry(self.subs[i].label, self.subs[i].owner, prints[i]) for i in firsts.values()
        ]
        hash_of = {self.subs[i].label: h for h, i in firsts.items()}
        for flag in screen(entries, threshold):
            out |= {
                i: flag.describe()
                for i in kept
                if self.subs[i].agent.agent_hash == hash_of[flag.copy]
            }
        return out


def _track_refusal(
    subs: Sequence[tuple[int, Submission]], track: Track, why: dict[int, str]
) -> str | None:
    """Why the agent these submissions share is refused on `track` (None: admitted)."""
    entering = [i for i, s in subs if s.enters(track)]
    if any(i not in why for i in entering):
        return None
    if entering:
        return why[entering[0]]
    pinned = sorted({s.manifest.track.value for _, s in subs if s.manifest})
    return f"pinned for track {', '.join(pinned)}, not {track.value}"


def admit(
    submissions: Sequence[Submission],
    tracks: Sequence[Track],
    spec: MechanismSpec,
    unregistered: OwnerCheck | None = None,
    arrivals: Arrivals | None = None,
) -> Admission:
    arrivals = arrivals or InMemoryArrivals()
    why = {
        i: reason
        for i, sub in enumerate(submissions)
        if (reason := door(sub, tracks, spec, unregistered))
    }
    order = {
        i: arrivals.arrival(sub.owner, sub.agent.agent_hash)
        for i, sub in enumerate(submissions)
        if i not in why
    }
    arrived = sorted(order, key=lambda i: (order[i], i))
    why |= _superseded(submissions, arrived)
    ranked = [i for i in arrived if i not in why]
    why |= _Screening(submissions, arrivals).refusals(ranked, order, spec.copy_similarity)
    at_door = [i for i in range(len(submissions)) if i not in order]
    return _admission(submissions, tracks, why, arrived + at_door)


def _admission(
    subs: Sequence[Submission], tracks: Sequence[Track], why: dict[int, str], ranked: list[int]
) -> Admission:
    by_hash: dict[str, list[tuple[int, Submission]]] = {}
    for i in ranked:
        by_hash.setdefault(subs[i].agent.agent_hash, []).append((i, subs[i]))
    refused: dict[str, dict[str, str]] = {}
    manifests: dict[str, AgentManifest] = {}
    entries: dict[str, dict[str, AgentManifest]] = {}
    notes = []
    for agent_hash, group in by_hash.items():
        for track in tracks:
            if reason := _track_refusal(group, track, why):
                refused.setdefault(agent_hash, {})[track.value] = reason
        admitted = [s for i, s in group if i not in why]
        verified = [s.verified for s in admitted + [s for _, s in group] if s.verified]
        if verified:
            manifests[agent_hash] = verified[0]
        for sub in admitted:
            if sub.verified:
                entries.setdefault(agent_hash, {})[sub.verified.track.value] = sub.verified
        first = group[0][1]
        for _, sub in group[1:]:
            if sub.manifest is None and first.manifest is None:
                notes.append(
                    f"{sub.agent.name}: same code as {first.label}, submitted first; dropped"
                )
    return Admission(
        agents=tuple(group[0][1].agent for group in by_hash.values()),
        refused=refused,
        manifests=manifests,
        entries=entries,
        notes=tuple(notes),
    )


def admit_files(
    agent_files: Sequence[Path],
    manifest_files: Sequence[Path],
    tracks: Sequence[Track],
    spec: MechanismSpec,
    unregistered: OwnerCheck | None = None,
    arrivals: Arrivals | None = None,
) -> Admission:
    """Plain agent files first, then manifests, each in the order given; the order
    counts only for submissions `arrivals` has never seen."""
    submissions = [Submission(Agent.load(p)) for p in agent_files]
    submissions += [read_submission(m) for m in manifest_files]
    return admit(submissions, tracks, spec, unregistered, arrivals)
