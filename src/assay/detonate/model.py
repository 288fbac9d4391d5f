"""The result of one detonation: observed capabilities with evidence, per-profile runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.mechanism.spec import Track
from assay.mechanism.taxonomy import CAPABILITIES
from assay.records import codec
from assay.records.observed import (
    UNTRUSTED_NOTE,
    CapabilityRecord,
    EventKind,
    EvidenceRecord,
    McpSummary,
    Observed,
    ProfileRecord,
    StepRecord,
)

MAX_EVIDENCE_PER_CAPABILITY = 8
MAX_EVENTS_PER_KIND = 40
MAX_TEXT = 300


def clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quoted(text: str, limit: int = MAX_TEXT) -> str:
    """Free text the artifact chose, marked as data: control characters shown as
    escapes, length capped, inside quotes."""
    return json.dumps(clip(text, limit), ensure_ascii=False)


@dataclass(frozen=True, order=True)
class Evidence:
    """One observation behind a capability. `source` is `trace` (the validator's own
    tracer), `watch` (its kernel watch on the planted home's secrets and shell
    profiles), `harness` (the in-sandbox harness's canary scan or MCP log), `network`
    (the run's network sink, outside the sandbox: connections, what they sent, DNS) or
    `files` (the validator's records of the home and the project before and after)."""

    capability: str
    profile: str
    event: str  # read | write | rename | unlink | exec | connect | dns | canary | ...
    path: str = ""
    argv: tuple[str, ...] = ()
    peer: str = ""
    detail: str = ""
    source: str = "trace"

    def key(self) -> tuple[str, str, tuple[str, ...], str, str, str]:
        """What was seen, regardless of the profile it was seen under."""
        return (self.event, self.path, self.argv, self.peer, self.detail, self.source)

    def record(self, profiles: tuple[str, ...]) -> EvidenceRecord:
        return EvidenceRecord(
            event=self.event,
            profile=self.profile,
            source=self.source,
            profiles=profiles,
            path=clip(self.path),
            argv=tuple(clip(a, 120) for a in self.argv[:12]),
            peer=self.peer,
            detail=clip(self.detail),
        )


@dataclass(frozen=True)
class StepOutcome:
    name: str
    argv: tuple[str, ...]
    exit_code: int | None
    timed_out: bool
    error: str = ""
    stderr_tail: str = ""

    def record(self) -> StepRecord:
        return StepRecord(
            name=clip(self.name, 160),
            argv=tuple(clip(a, 120) for a in self.argv[:12]),
            exit=self.exit_code,
            timed_out=self.timed_out,
            error=clip(self.error),
            stderr_tail=quoted(self.stderr_tail) if self.stderr_tail.strip() else "",
        )


@dataclass(frozen=True)
class ProfileRun:
    """One sealed run of the harness under one profile."""

    name: str
    description: str
    status: str  # ok | a LimitHit value (cpu_budget, trace_cap, ...) | harness_failed | skipped
    steps: tuple[StepOutcome, ...] = ()
    skipped_steps: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    cpu_s: float = 0.0
    wall_s: float = 0.0

    def record(self) -> ProfileRecord:
        return ProfileRecord(
            name=self.name,
            description=self.description,
            status=self.status,
            capabilities=self.capabilities,
            steps=tuple(s.record() for s in self.steps),
            skipped_steps=self.skipped_steps,
            cpu_s=round(self.cpu_s, 2),
            wall_s=round(self.wall_s, 2),
        )


@dataclass(frozen=True)
class ObservedCapability:
    capability: str
    evidence: tuple[Evidence, ...]
    profiles: tuple[str, ...]

    @property
    def group(self) -> str:
        return CAPABILITIES[self.capability].group

    @property
    def protection(self) -> str:
        return CAPABILITIES[self.capability].protection.value

    def record(self) -> CapabilityRecord:
        return CapabilityRecord(
            capability=self.capability,
            group=self.group,
            protection=self.protection,
            profiles=self.profiles,
            evidence=self._merged_evidence(),
        )

    def _merged_evidence(self) -> tuple[EvidenceRecord, ...]:
        """One entry per distinct observation, listing every profile that showed it."""
        merged: dict[tuple[object, ...], list[Evidence]] = {}
        for item in self.evidence:
            merged.setdefault(item.key(), []).append(item)
        entries = list(merged.values())[:MAX_EVIDENCE_PER_CAPABILITY]
        return tuple(items[0].record(tuple(e.profile for e in items)) for items in entries)


@dataclass(frozen=True)
class Detonation:
    """What the validator saw the artifact do (DESIGN §8); `observed()` is what the
    round stores and agents receive as `context.observed`."""

    track: Track
    capabilities: tuple[ObservedCapability, ...]
    profiles: tuple[ProfileRun, ...]
    events: Mapping[EventKind, tuple[str, ...]] = field(default_factory=dict)
    mcp: McpSummary | None = None
    notes: tuple[str, ...] = ()
    # Why the detonation may not show everything the artifact does (a profile stopped by
    # a limit, the harness killed, its log over the cap, steps or profiles not run).
    # Disturbing the detonation is itself evidence: never read "nothing observed" then.
    interference: tuple[str, ...] = ()

    @classmethod
    def failed(cls, track: Track, reason: str) -> Detonation:
        return cls(track, (), (), interference=(clip(reason),))

    @property
    def complete(self) -> bool:
        return not self.interference

    @property
    def names(self) -> frozenset[str]:
        return frozenset(c.capability for c in self.capabilities)

    def gated(self) -> dict[str, tuple[str, ...]]:
        """Capabilities the baseline run did not show, with the profiles that did."""
        return {
            c.capability: tuple(p for p in c.profiles if p != "baseline")
            for c in self.capabilities
            if "baseline" not in c.profiles
        }

    def observed(self) -> Observed:
        return Observed(
            track=self.track,
            capabilities=tuple(c.record() for c in self.capabilities),
            gated=self.gated(),
            profiles=tuple(p.record() for p in self.profiles),
            events=dict(self.events),
            notes=self.notes,
            complete=self.complete,
            interference=self.interference,
            untrusted=UNTRUSTED_NOTE,
            mcp=self.mcp,
        )

    def to_json(self) -> dict[str, Any]:
        """`observed()` as JSON builtins (what `assay detonate --json` prints)."""
        data: dict[str, Any] = codec.to_builtins(self.observed())
        return data
