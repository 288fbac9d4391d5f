"""What each rep used and why it failed: shown beside scores, never part of them.

Scores and weights are byte-identical across machines and executors; the CPU a
rep used and a budget failure's wording are not, so they travel separately.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from assay.mechanism.spec import MechanismSpec, Track
from assay.results.records import RepRecord


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


RepKey = tuple[str, str, str, int]  # track, agent, task, rep


class Diagnostics(msgspec.Struct, frozen=True):
    reps: dict[RepKey, RepDiagnostic]

    def of(self, track: str, agent: str, task: str, rep: int) -> RepDiagnostic | None:
        return self.reps.get((track, agent, task, rep))

    def failed(self) -> list[RepDiagnostic]:
        """Failed reps in a stable order (track, agent, task, rep)."""
        return [d for key, d in sorted(self.reps.items()) if d.status == "failed"]


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
        )
        for r in records
    }
    return Diagnostics(reps)
