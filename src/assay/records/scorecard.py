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


class ScoreInterval(_Frozen, frozen=True, kw_only=True):
    """The score's bootstrap interval over the track's tasks (`mechanism.bootstrap`)."""

    low: float
    high: float
    level: float  # e.g. 0.95

    @property
    def text(self) -> str:
        return f"{self.low:.3f}–{self.high:.3f}"


STABLE = 0.9  # below this share of resamples, the ranking's top order is called uncertain


class RankStability(_Frozen, frozen=True, kw_only=True):
    """How often, over resamples of a track's tasks, the ranking's first (up to three)
    agents are the top scorers in the same order: low means the draw is too small to
    separate them."""

    agents: list[str]
    kept: float
    resamples: int
    level: float  # the confidence level of the track's score intervals

    @property
    def text(self) -> str:
        """One sentence, as every format prints it."""
        top = {1: "the top agent stays first", 2: "the top two keep their order"}
        what = top.get(len(self.agents), f"the top {len(self.agents)} keep their order")
        said = f"{what} in {self.kept:.0%} of {self.resamples} resamples of the tasks"
        if self.kept < STABLE:
            return f"{said}: the draw is too small to separate them with confidence"
        return said


class AgentTrackScore(_Frozen, frozen=True, kw_only=True):
    score: float
    interval: ScoreInterval | None = None
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
    stability: dict[str, RankStability] = {}
    # track -> agent -> why: reports identical on every task to an earlier arrival's
    # (behavioural screening, `validator/screening.py`); scored 0, never paid.
    copies: dict[str, dict[str, str]] = {}

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


Views = dict[Track, dict[str, AgentTrackScore]]
