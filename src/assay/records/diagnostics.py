"""What each rep used and why it failed: shown beside scores, never part of them.

Scores and weights are byte-identical across machines and executors; the CPU a
rep used, its inference spend and a budget failure's wording are not, so they
travel separately.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from assay.mechanism.spec import MechanismSpec, Track
from assay.records.rep import RepRecord
from assay.records.usage import InferenceUsage


class RepDiagnostic(msgspec.Struct, frozen=True, kw_only=True):
    track: Track
    agent: str
    task: str
    rep: int
    status: str
    reason: str | None
    detail: str
    cpu_s: float
    cpu_budget_s: float

    @property
    def cpu_text(self) -> str:
        """CPU used against the budget, as every report shows it."""
        return f"{self.cpu_s:.2f} / {self.cpu_budget_s:g} s"

    inference: InferenceUsage | None = None


class InferenceTotals(msgspec.Struct, frozen=True, kw_only=True):
    """One agent's inference spend on one track, summed over its reps."""

    track: Track
    agent: str
    reps: int
    requests: int
    refused: int
    errors: int
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    upstream_s: float


RepKey = tuple[str, str, str, int]  # track, agent, task, rep


class Diagnostics(msgspec.Struct, frozen=True):
    reps: dict[RepKey, RepDiagnostic]

    def of(self, track: str, agent: str, task: str, rep: int) -> RepDiagnostic | None:
        return self.reps.get((track, agent, task, rep))

    def failed(self) -> list[RepDiagnostic]:
        """Failed reps in a stable order (track, agent, task, rep)."""
        return [d for key, d in sorted(self.reps.items()) if d.status == "failed"]

    def inference(self) -> list[InferenceTotals]:
        """Per track and agent, what reps spent on inference (only where any rep had a proxy)."""
        groups: dict[tuple[str, str], list[InferenceUsage]] = {}
        for (track, agent, _, _), d in sorted(self.reps.items()):
            if d.inference is not None:
                groups.setdefault((track, agent), []).append(d.inference)
        return [
            InferenceTotals(
                track=Track(track),
                agent=agent,
                reps=len(spends),
                requests=sum(s.requests for s in spends),
                refused=sum(s.refused for s in spends),
                errors=sum(s.errors for s in spends),
                prompt_tokens=sum(s.prompt_tokens for s in spends),
                completion_tokens=sum(s.completion_tokens for s in spends),
                estimated=any(s.estimated for s in spends),
                upstream_s=round(sum(s.upstream_s for s in spends), 3),
            )
            for (track, agent), spends in groups.items()
        ]


def diagnose(records: Iterable[RepRecord], spec: MechanismSpec) -> Diagnostics:
    reps = {
        (r.track.value, r.agent, r.task, r.rep): RepDiagnostic(
            track=r.track,
            agent=r.agent,
            task=r.task,
            rep=r.rep,
            status=r.status,
            reason=r.reason,
            detail=r.detail,
            cpu_s=round(r.cpu_s, 3),
            cpu_budget_s=spec.track(r.track).cpu_budget_s,
            inference=r.inference,
        )
        for r in records
    }
    return Diagnostics(reps)
