"""Per-agent, per-track scores from reduced task results (DESIGN §6)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from assay.mechanism.consensus import reduce_scores, reduce_verdicts
from assay.mechanism.matching import (
    FindingItem,
    Targets,
    VulnerabilityItem,
    score_findings,
    score_repository,
)
from assay.mechanism.metrics import Confusion, clamped_mcc, confusion, is_correct, mcc
from assay.mechanism.spec import MechanismSpec, Track


class Rep(Protocol):
    """One rep as the scorer reads it; a failed rep's verdict and items are ignored."""

    @property
    def completed(self) -> bool: ...
    @property
    def verdict(self) -> str | None: ...
    @property
    def findings(self) -> Sequence[FindingItem]: ...
    @property
    def vulnerabilities(self) -> Sequence[VulnerabilityItem]: ...


@dataclass(frozen=True)
class RepResult:
    """A plain `Rep`, for callers that hold no record of their own."""

    completed: bool
    verdict: str | None = None
    findings: Sequence[FindingItem] = ()
    vulnerabilities: Sequence[VulnerabilityItem] = ()


@dataclass(frozen=True)
class TaskTruth:
    task_id: str
    label: str
    expected_findings: Sequence[FindingItem] = ()
    planted: Sequence[VulnerabilityItem] = ()

    @cached_property
    def targets(self) -> Targets:
        return Targets.of(self.expected_findings, self.planted)


@dataclass(frozen=True)
class TaskScore:
    task_id: str
    label: str
    verdict: str | None  # behavioural consensus; None when every rep failed
    correct: bool
    findings: float | None  # behavioural: F1 credited only where correct; None if none listed
    f2: float | None  # repositories: mean over completed reps


@dataclass(frozen=True)
class TrackScore:
    track: Track
    score: float
    tasks: tuple[TaskScore, ...]
    confusion: Confusion | None = None
    mcc: float | None = None
    clamped_mcc: float | None = None
    findings: float | None = None  # mean findings score over tasks that list findings
    f2: float | None = None
    # What reporting nothing scores on the same draw; eligibility needs strictly
    # more (DESIGN §6). Constant behavioural predictors score 0, so 0 there.
    floor: float = 0.0


def _rep_verdict(rep: Rep) -> str | None:
    return rep.verdict if rep.completed else None


def _behavioural_task(truth: TaskTruth, reps: Sequence[Rep], spec: MechanismSpec) -> TaskScore:
    verdict = reduce_verdicts([_rep_verdict(r) for r in reps])
    correct = is_correct(truth.label, verdict)
    findings: float | None = None
    if truth.expected_findings:
        findings = _credited_findings(truth, reps, verdict, spec) if correct else 0.0
    return TaskScore(truth.task_id, truth.label, verdict, correct, findings, None)


def _credited_findings(
    truth: TaskTruth, reps: Sequence[Rep], verdict: str | None, spec: MechanismSpec
) -> float:
    # The findings of the reps that agree with the consensus, averaged: a rep
    # that voted otherwise does not speak for the task.
    agreeing = [r for r in reps if r.completed and r.verdict == verdict]
    per_rep = [score_findings(r.findings, truth.targets, spec) for r in agreeing]
    return math.fsum(per_rep) / len(per_rep)


def _repository_task(truth: TaskTruth, reps: Sequence[Rep], spec: MechanismSpec) -> TaskScore:
    per_rep = [
        score_repository(r.vulnerabilities, truth.targets, spec) if r.completed else None
        for r in reps
    ]
    f2 = reduce_scores(per_rep)
    return TaskScore(truth.task_id, truth.label, None, any(r.completed for r in reps), None, f2)


def score_track(
    track: Track,
    tasks: Sequence[tuple[TaskTruth, Sequence[Rep]]],
    spec: MechanismSpec,
) -> TrackScore:
    """Score one agent on one track from each task's truth and its reps."""
    ordered = sorted(tasks, key=lambda t: t[0].task_id)
    if track is Track.REPOSITORIES:
        scored = tuple(_repository_task(truth, reps, spec) for truth, reps in ordered)
        f2 = math.fsum(t.f2 or 0.0 for t in scored) / len(scored) if scored else 0.0
        return TrackScore(track, f2, scored, f2=f2, floor=silence_score(ordered))
    scored = tuple(_behavioural_task(truth, reps, spec) for truth, reps in ordered)
    matrix = confusion((t.label, t.verdict) for t in scored)
    raw = mcc(matrix.tp, matrix.tn, matrix.fp, matrix.fn)
    clamped = clamped_mcc(matrix.tp, matrix.tn, matrix.fp, matrix.fn)
    listed = [t.findings for t in scored if t.findings is not None]
    findings = math.fsum(listed) / len(listed) if listed else None
    score = behavioural_score(clamped, findings, spec)
    return TrackScore(track, score, scored, matrix, raw, clamped, findings)


def behavioural_score(clamped: float, findings: float | None, spec: MechanismSpec) -> float:
    """`max(0, MCC) × ((1 − w_f) + w_f × findings)`; no listed findings leaves MCC alone."""
    if findings is None:
        return clamped
    w = spec.findings_weight
    return clamped * ((1.0 - w) + w * findings)


def silence_score(tasks: Sequence[tuple[TaskTruth, Sequence[Rep]]]) -> float:
    """The mean F2 an agent reporting nothing earns on these repositories.

    It scores 1.0 on every clean repository (the clean rule) and 0.0 on every
    planted one, so the floor is the share of clean tasks. The track score
    stays the plain mean F2 (the number compared with Phylax); the floor only
    decides eligibility, so silence is never paid. With no task the floor is
    1.0: nothing separates skill from silence.
    """
    if not tasks:
        return 1.0
    return sum(not truth.planted for truth, _ in tasks) / len(tasks)
