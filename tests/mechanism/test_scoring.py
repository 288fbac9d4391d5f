from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.scoring import RepResult, TaskTruth, score_track
from assay.mechanism.spec import Track
from assay.mechanism.weights import eligible
from assay.schema.mechanism_file import pinned

SPEC = pinned()

FINDING = FindingItem(category="credential_theft", file="run.py", line=3, title="reads SSH key")


def task(i: int, label: str, findings: bool = True) -> TaskTruth:
    expected = (FINDING,) if label == "malicious" and findings else ()
    return TaskTruth(f"t{i:02d}", label, expected)


def reps(verdict: str | None, findings: tuple[dict[str, Any], ...] = ()) -> list[RepResult]:
    if verdict is None:
        return [RepResult(False)] * 3
    return [RepResult(True, verdict, findings)] * 3


LABELS = ["malicious", "safe"] * 5


@given(
    st.lists(st.sampled_from(["malicious", "safe"]), max_size=30),
    st.sampled_from(["ALLOW", "WARN", "BLOCK", None]),
)
def test_every_constant_predictor_scores_exactly_zero(
    labels: list[str], verdict: str | None
) -> None:
    tasks = [(task(i, label), reps(verdict, (FINDING,))) for i, label in enumerate(labels)]
    assert score_track(Track.SKILLS, tasks, spec=SPEC).score == 0.0


def test_perfect_agent_with_perfect_findings_scores_one() -> None:
    tasks = [
        (
            task(i, label),
            reps(
                "BLOCK" if label == "malicious" else "ALLOW",
                (FINDING,) if label == "malicious" else (),
            ),
        )
        for i, label in enumerate(LABELS)
    ]
    result = score_track(Track.SKILLS, tasks, spec=SPEC)
    assert result.score == 1.0
    assert result.mcc == 1.0 and result.findings == 1.0


def test_findings_are_credited_only_where_the_verdict_is_right() -> None:
    tasks = [
        (task(i, label), reps("BLOCK" if label == "malicious" else "ALLOW", (FINDING,)))
        for i, label in enumerate(LABELS)
    ]
    # one malicious task answered ALLOW, with perfect findings: earns nothing there
    tasks[0] = (tasks[0][0], reps("ALLOW", (FINDING,)))
    result = score_track(Track.SKILLS, tasks, spec=SPEC)
    per_task = {t.task_id: t.findings for t in result.tasks}
    assert per_task["t00"] == 0.0
    assert per_task["t02"] == 1.0
    assert result.findings == 0.8
    assert result.score == result.clamped_mcc * (0.75 + 0.25 * 0.8)


def test_all_failed_task_is_wrong_and_failed_reps_do_not_vote() -> None:
    tasks = [
        (task(i, label, findings=False), reps("BLOCK" if label == "malicious" else "ALLOW"))
        for i, label in enumerate(LABELS)
    ]
    tasks[1] = (tasks[1][0], reps(None))
    tasks[2] = (tasks[2][0], [RepResult(False), RepResult(True, "WARN"), RepResult(False)])
    result = score_track(Track.SKILLS, tasks, spec=SPEC)
    assert result.confusion is not None
    assert (result.confusion.tp, result.confusion.fp, result.confusion.tn) == (5, 1, 4)


def test_task_order_does_not_change_the_score() -> None:
    tasks = [
        (task(i, label), reps(["BLOCK", "ALLOW", "WARN"][i % 3], (FINDING,)))
        for i, label in enumerate(LABELS)
    ]
    assert score_track(Track.SKILLS, tasks, spec=SPEC) == score_track(
        Track.SKILLS, tasks[::-1], spec=SPEC
    )


def test_repository_task_is_the_mean_of_completed_reps() -> None:
    planted = (VulnerabilityItem(file="a.py", line=10, cwe="CWE-78", title="command injection"),)
    truth = TaskTruth("r1", "malicious", planted=planted)
    hit = RepResult(True, vulnerabilities=planted)
    miss = RepResult(True, vulnerabilities=())
    result = score_track(
        Track.REPOSITORIES,
        [(truth, [hit, miss]), (TaskTruth("r2", "safe"), [RepResult(False)] * 2)],
        spec=SPEC,
    )
    assert [t.f2 for t in result.tasks] == [0.5, 0.0]
    assert result.f2 == result.score == 0.25
    assert result.floor == 0.5  # reporting nothing earns 0.5 on this draw
    assert not eligible(result.score, 0.20, result.floor)


PLANTED = (VulnerabilityItem(file="a.py", line=10, cwe="CWE-78", title="command injection"),)


def repositories(planted_tasks: int, clean_tasks: int) -> list[TaskTruth]:
    return [TaskTruth(f"p{i}", "malicious", planted=PLANTED) for i in range(planted_tasks)] + [
        TaskTruth(f"c{i}", "safe") for i in range(clean_tasks)
    ]


@given(st.integers(0, 10), st.integers(0, 10))
def test_reporting_nothing_is_never_eligible(planted_tasks: int, clean_tasks: int) -> None:
    """Silence scores exactly the floor, and eligibility needs strictly more."""
    silent = [RepResult(True)] * 2
    tasks = [(truth, silent) for truth in repositories(planted_tasks, clean_tasks)]
    result = score_track(Track.REPOSITORIES, tasks, spec=SPEC)
    assert result.score == (result.floor if tasks else 0.0)
    assert not eligible(result.score, 0.0, result.floor)


def test_repository_score_is_the_mean_f2() -> None:
    perfect = [(t, [RepResult(True, vulnerabilities=t.planted)] * 2) for t in repositories(2, 2)]
    result = score_track(Track.REPOSITORIES, perfect, spec=SPEC)
    assert result.score == 1.0 and result.floor == 0.5
    half = [
        (t, [RepResult(True, vulnerabilities=t.planted), RepResult(True)])
        for t in repositories(2, 2)
    ]
    result = score_track(Track.REPOSITORIES, half, spec=SPEC)
    assert result.f2 == result.score == 0.75
    assert eligible(result.score, 0.50, result.floor)


def test_design_worked_example_on_one_task() -> None:
    """DESIGN §6: 4 planted, 5 reported, 3 matched -> 0.714; the track score is that mean."""
    planted = tuple(
        VulnerabilityItem(file="a.py", line=100 * i, cwe="CWE-89", title="sql injection")
        for i in range(1, 5)
    )
    moved = (dataclasses.replace(planted[0], line=5000 + i) for i in range(2))
    reported = (*planted[:3], *moved)
    tasks = [
        (TaskTruth("r", "malicious", planted=planted), [RepResult(True, vulnerabilities=reported)])
    ]
    assert round(score_track(Track.REPOSITORIES, tasks, spec=SPEC).score, 3) == 0.714
