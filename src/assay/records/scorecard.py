"""Scorecard views: each agent's score on each track, its tasks and reps, and the weights.

What `assay.validator.scoring` computes from rep records and every output reads
(store, reports, the CLI): msgspec structs, cheap enough to build a million of.
"""

from __future__ import annotations

from itertools import pairwise
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


class ScoreParts(_Frozen, frozen=True, kw_only=True):
    """A score split into what earned it and what each task cost.

    Behavioural tracks: score = clamped MCC × ((1 − w_f) + w_f × findings), so the
    verdict part is clamped MCC × (1 − w_f) and the findings part clamped MCC × w_f ×
    findings (no listed findings: the verdict part is the whole clamped MCC). The points
    lost, 1 − score, are (1 − clamped MCC), shared evenly by the wrong verdicts (MCC is
    not a sum over tasks; every task when none was wrong: a draw without both labels), plus
    clamped MCC × w_f × (1 − findings_t) / n for each task with listed findings: exact,
    they sum to 1 − score. Repositories: score = mean F2, a task losing (1 − F2_t) / n."""

    verdict: float
    findings: float
    lost: dict[str, float]  # task -> its share of the points lost


def score_formula(behavioural: bool, findings_weight: float) -> str:
    """How a track's score is made, in the words and weights every format prints."""
    if not behavioural:
        return "score = mean F2 over the tasks"
    keep = 1.0 - findings_weight
    return f"score = max(0, MCC) × ({keep:g} + {findings_weight:g} × findings)"


def _behavioural_parts(score: AgentTrackScore, findings_weight: float) -> ScoreParts:
    clamped = score.clamped_mcc or 0.0
    tasks = score.task_results
    listed = [t for t in tasks if t.findings is not None]
    w = findings_weight if listed else 0.0
    lost = dict.fromkeys((t.task for t in tasks), 0.0)
    wrong = [t.task for t in tasks if not t.correct] or [t.task for t in tasks]
    for task in wrong:
        lost[task] += (1.0 - clamped) / len(wrong)
    for t in listed:
        lost[t.task] += clamped * w * (1.0 - (t.findings or 0.0)) / len(listed)
    return ScoreParts(
        verdict=clamped * (1.0 - w),
        findings=clamped * w * (score.findings or 0.0) if listed else 0.0,
        lost=lost,
    )


def _repository_parts(score: AgentTrackScore) -> ScoreParts:
    n = len(score.task_results) or 1
    return ScoreParts(
        verdict=score.score,
        findings=0.0,
        lost={t.task: (1.0 - (t.f2 or 0.0)) / n for t in score.task_results},
    )


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

    def parts(self, findings_weight: float) -> ScoreParts:
        """The score's verdict and findings parts, and each task's share of what it lost
        (`findings_weight` is the pinned w_f)."""
        if self.confusion is None:  # repositories: no verdicts, a mean F2
            return _repository_parts(self)
        return _behavioural_parts(self, findings_weight)


def pay_rule(top_split: tuple[float, ...], scores: dict[str, AgentTrackScore]) -> str:
    """How a track's share is paid, in one sentence every format prints, and why agents
    with equal scores are paid unequally when they are."""
    shares = " / ".join(f"{share:.2f}" for share in top_split)
    said = (
        f"the track's share is paid to its top {len(top_split)} eligible agents, {shares} "
        "(renormalised when fewer are eligible)"
    )
    ranked = sorted((s.rank, s.score) for s in scores.values() if s.rank is not None)
    paid_tie = any(
        score == next_score and rank <= len(top_split)
        for (rank, score), (_, next_score) in pairwise(ranked)
    )
    if paid_tie:
        said += (
            "; equal scores are ordered by a hash of the round seed, the track and the agent "
            "(a seeded draw, not merit), so tied agents take different places and pay"
        )
    return said


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
