"""Scorecard views: each agent's score on each track, its tasks and reps, and the weights.

What `assay.validator.scoring` computes from rep records and every output reads
(store, reports, the CLI): msgspec structs, cheap enough to build a million of.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from assay.mechanism.spec import Track


class _Frozen(msgspec.Struct, frozen=True, kw_only=True):
    """Result views: msgspec structs, cheap enough to build a million of."""


class RepView(_Frozen, frozen=True, kw_only=True):
    rep: int
    status: Literal["completed", "failed"]
    reason: str | None = None
    verdict: str | None = None


class TaskView(_Frozen, frozen=True, kw_only=True):
    task: str
    label: str
    verdict: str | None = None
    correct: bool
    findings: float | None = None
    f2: float | None = None
    reps: list[RepView]


class ConfusionView(_Frozen, frozen=True, kw_only=True):
    """The matrix the score is computed from; `no_verdict` says how many of its
    FN and FP are tasks where no rep completed (they count as wrong verdicts)."""

    tp: int
    tn: int
    fp: int
    fn: int
    no_verdict: int = 0


class AgentTrackScore(_Frozen, frozen=True, kw_only=True):
    score: float
    eligible: bool
    rank: int | None = None
    threshold: float
    cpu_budget_s: float = 0.0
    confusion: ConfusionView | None = None
    mcc: float | None = None
    clamped_mcc: float | None = None
    findings: float | None = None
    f2: float | None = None
    floor: float = 0.0  # what reporting nothing scores on this draw; eligible needs more
    tasks: int
    failed_reps: int
    failure_reasons: dict[str, int]
    task_results: list[TaskView]


class Scorecard(_Frozen, frozen=True, kw_only=True):
    mechanism_version: str
    mechanism_digest: str
    scores: dict[str, dict[str, AgentTrackScore]]
    weights: dict[str, float]

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


Views = dict[Track, dict[str, AgentTrackScore]]
