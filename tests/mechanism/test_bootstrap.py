"""The bootstrap over tasks: the track score's own rule on each resample, seeded, and the
ranking's stability under the same resamples."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from assay.mechanism import bootstrap
from assay.mechanism.metrics import clamped_mcc, confusion
from assay.mechanism.scoring import TaskScore, behavioural_score
from assay.mechanism.spec import Track
from assay.schema.mechanism_file import pinned

SPEC = pinned()


def task(i: int, label: str, verdict: str | None, findings: float | None) -> TaskScore:
    correct = verdict is not None and (verdict != "ALLOW") == (label == "malicious")
    return TaskScore(f"t{i}", label, verdict, correct, findings, None)


def agent(rng: random.Random, skill: float, tasks: int = 30) -> list[TaskScore]:
    out = []
    for i in range(tasks):
        label = "malicious" if i % 3 else "safe"
        right = rng.random() < skill
        flag = (label == "malicious") == right
        verdict = rng.choice([None, "WARN", "BLOCK", "ALLOW"]) if rng.random() < 0.05 else None
        verdict = verdict or ("BLOCK" if flag else "ALLOW")
        findings = rng.choice([None, 0.0, 0.5, 1.0]) if label == "malicious" else None
        out.append(task(i, label, verdict, findings))
    return out


def scalar_score(tasks: list[TaskScore]) -> float:
    """The track score as `score_track` computes it, from the task scores."""
    m = confusion((t.label, t.verdict) for t in tasks)
    listed = [t.findings for t in tasks if t.findings is not None]
    findings = math.fsum(listed) / len(listed) if listed else None
    return behavioural_score(clamped_mcc(m.tp, m.tn, m.fp, m.fn), findings, SPEC)


@pytest.mark.parametrize("skill", [0.3, 0.7, 0.95])
def test_each_resample_is_scored_by_the_track_rule(skill: float) -> None:
    tasks = agent(random.Random(skill), skill)
    rows = np.random.default_rng(7).integers(0, len(tasks), size=(50, len(tasks)))
    rows[0] = np.arange(len(tasks))  # the draw itself
    counts = bootstrap.multiplicities(rows, len(tasks))
    scores = bootstrap.resampled_scores(Track.SKILLS, tasks, counts, SPEC)
    for row, score in zip(rows, scores, strict=True):
        assert score == pytest.approx(scalar_score([tasks[i] for i in row]), abs=1e-12)


def test_repository_resamples_are_mean_f2() -> None:
    tasks = [TaskScore(f"r{i}", "malicious", None, True, None, i / 10) for i in range(10)]
    rows = np.random.default_rng(8).integers(0, 10, size=(20, 10))
    counts = bootstrap.multiplicities(rows, 10)
    scores = bootstrap.resampled_scores(Track.REPOSITORIES, tasks, counts, SPEC)
    for row, score in zip(rows, scores, strict=True):
        assert score == pytest.approx(sum(tasks[i].f2 or 0.0 for i in row) / 10)


def test_draws_are_seeded_by_round_and_track() -> None:
    same = bootstrap.draws("5eed", Track.SKILLS, 12)
    assert (same == bootstrap.draws("5eed", Track.SKILLS, 12)).all()
    assert (same.sum(axis=1) == 12).all()  # every resample draws as many tasks
    assert not (same == bootstrap.draws("5eee", Track.SKILLS, 12)).all()
    assert not (same == bootstrap.draws("5eed", Track.PACKAGES, 12)).all()


def test_the_interval_narrows_with_more_tasks() -> None:
    rng = random.Random(1)
    widths = []
    for n in (12, 120):
        tasks = agent(rng, 0.8, n)
        rows = bootstrap.draws("5eed", Track.SKILLS, n)
        found = bootstrap.interval(bootstrap.resampled_scores(Track.SKILLS, tasks, rows, SPEC))
        assert found is not None and 0.0 <= found.low <= found.high <= 1.0
        widths.append(found.high - found.low)
    assert widths[1] < widths[0]


def test_a_clear_ranking_keeps_its_order_and_a_close_one_does_not() -> None:
    rng = random.Random(2)
    clear = {"a": agent(rng, 0.98, 90), "b": agent(rng, 0.75, 90), "c": agent(rng, 0.5, 90)}
    close = {"a": agent(rng, 0.8, 12), "b": agent(rng, 0.78, 12), "c": agent(rng, 0.76, 12)}
    kept = []
    for agents in (clear, close):
        n = len(agents["a"])
        rows = bootstrap.draws("5eed", Track.SKILLS, n)
        scores = {
            a: bootstrap.resampled_scores(Track.SKILLS, t, rows, SPEC) for a, t in agents.items()
        }
        held = bootstrap.stability(["a", "b", "c"], scores)
        assert held is not None and held.agents == ("a", "b", "c")
        kept.append(held.kept)
    assert kept[0] > 0.9 and kept[1] < 0.5
    assert bootstrap.stability(["a"], {"a": np.zeros(3)}) is None


def test_agents_scoring_alike_are_never_separated() -> None:
    same = agent(random.Random(3), 0.8, 20)
    rows = bootstrap.draws("5eed", Track.SKILLS, 20)
    scores = {a: bootstrap.resampled_scores(Track.SKILLS, same, rows, SPEC) for a in "ab"}
    held = bootstrap.stability(["a", "b"], scores)
    assert held is not None and held.kept == 0.0


def test_a_tie_below_the_leaders_is_not_asked_to_keep_an_order() -> None:
    """Two agents well apart above three scoring 0: the question is whether the two keep
    their order, not whether three agents tied at 0 do (they never can)."""
    rng = random.Random(4)
    agents = {"a": agent(rng, 0.98, 60), "b": agent(rng, 0.7, 60)}
    agents |= {z: [task(i, "safe", None, None) for i in range(60)] for z in ("x", "y", "z")}
    rows = bootstrap.draws("5eed", Track.SKILLS, 60)
    scores = {a: bootstrap.resampled_scores(Track.SKILLS, t, rows, SPEC) for a, t in agents.items()}
    order = ["a", "b", "x", "y", "z"]
    assert bootstrap.stability(order, scores).kept == 0.0  # type: ignore[union-attr]
    held = bootstrap.stability(order, scores, top_n=2)
    assert held is not None and held.agents == ("a", "b") and held.kept >= 0.8


def test_the_agents_after_the_top_are_all_compared_with_its_last() -> None:
    """Asking about the top two compares the second with every agent below it, the third
    included (it was skipped when the third place was taken as fixed)."""
    rng = random.Random(5)
    agents = {"a": agent(rng, 0.98, 60), "b": agent(rng, 0.75, 60), "c": agent(rng, 0.75, 60)}
    rows = bootstrap.draws("5eed", Track.SKILLS, 60)
    scores = {a: bootstrap.resampled_scores(Track.SKILLS, t, rows, SPEC) for a, t in agents.items()}
    held = bootstrap.stability(["a", "b", "c"], scores, top_n=2)
    expected = (scores["a"] > scores["b"]) & (scores["b"] > scores["c"])
    assert held is not None and held.kept == pytest.approx(float(expected.mean()))
    first = bootstrap.stability(["a", "b", "c"], scores, top_n=1)
    assert first is not None and first.agents == ("a",)


def test_two_leaders_far_apart_above_an_unpaid_tie_are_asked_about_alone() -> None:
    """The demo's mcp_servers line: two paid agents far apart, then agents scoring 0 (or
    below the threshold) tied with each other. The question is the two leaders' order."""
    from assay.records.scorecard import AgentTrackScore
    from assay.validator.scoring import _separated

    def view(score: float, rank: int | None) -> AgentTrackScore:
        return AgentTrackScore(
            score=score,
            eligible=rank is not None,
            rank=rank,
            threshold=0.2,
            tasks=30,
            failed_reps=0,
            failure_reasons={},
            task_results=[],
        )

    order = ["a", "b", "c", "d"]
    tied = {"a": view(0.779, 1), "b": view(0.572, 2), "c": view(0.0, None), "d": view(0.0, None)}
    assert _separated(order, tied) == 2
    unpaid = tied | {"c": view(0.1, None), "d": view(0.05, None)}
    assert _separated(order, unpaid) == 2
    paid = tied | {"c": view(0.3, 3), "d": view(0.3, None)}
    assert _separated(order, paid) == 2  # the third ties the fourth: it has no place to keep
    three = tied | {"c": view(0.3, 3), "d": view(0.1, None)}
    assert _separated(order, three) == 3
    # Nobody paid, or a leader tied with the next: no order to keep, no stability line.
    nobody = {a: view(0.0, None) for a in order}
    assert _separated(order, nobody) == 0
    level = tied | {"a": view(0.5, 1), "b": view(0.5, 2)}
    assert _separated(order, level) == 0
