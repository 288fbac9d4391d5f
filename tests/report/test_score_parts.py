"""A score shows its parts: the formula with the pinned w_f in every format, the verdict
and findings parts adding up to the score, and each task's share of the points lost."""

from __future__ import annotations

import math
from dataclasses import replace

import msgspec
import pytest
from report_fixtures import SPEC, build_result
from report_markup import parse

from assay.cli import output
from assay.records.round import RoundResult
from assay.report.html import render_html
from assay.report.markdown import render_markdown

FORMULA = (
    f"score = max(0, MCC) × ({1 - SPEC.findings_weight:g} + {SPEC.findings_weight:g} × findings)"
)


@pytest.fixture(scope="module")
def result() -> RoundResult:
    return build_result(agents=4, scale=0.2)


def test_the_parts_add_up_to_the_score_and_the_losses_to_what_it_lost(
    result: RoundResult,
) -> None:
    assert result.card is not None
    assert "0.75 + 0.25" in FORMULA  # the pinned w_f is 0.25
    for track, scores in result.card.scores.items():
        for agent, score in scores.items():
            parts = score.parts(SPEC.findings_weight)
            assert math.isclose(parts.verdict + parts.findings, score.score, abs_tol=1e-9)
            lost = sum(parts.lost.values())
            assert math.isclose(lost, 1.0 - score.score, abs_tol=1e-9), (track, agent)
            assert set(parts.lost) == {t.task for t in score.task_results}
            if score.clamped_mcc and score.findings is not None:
                expected = score.clamped_mcc * SPEC.findings_weight * score.findings
                assert math.isclose(parts.findings, expected)
    # Every wrong verdict of a skills agent costs it something; right ones with every
    # finding matched cost nothing.
    for score in result.card.scores["skills"].values():
        parts = score.parts(SPEC.findings_weight)
        for t in score.task_results:
            if not t.correct and (score.clamped_mcc or 0.0) < 1.0:
                assert parts.lost[t.task] > 0
            if t.correct and t.findings in (None, 1.0) and score.clamped_mcc:
                assert parts.lost[t.task] == 0


def test_the_html_report_says_the_formula_and_splits_each_bar(result: RoundResult) -> None:
    html = render_html(result)
    page = parse(html)
    skills = html.split('id="track-skills"', 1)[1].split('<section class="track"', 1)[0]
    assert FORMULA in skills
    verdict = page.find("rect", "verdict", "track-skills")
    findings = page.find("rect", "findings", "track-skills")
    assert len(verdict) == len(findings) == len(result.agents)
    assert "points lost" in skills and 'class="num lost"' in skills


def test_the_markdown_and_the_terminal_say_the_formula(result: RoundResult) -> None:
    text = render_markdown(result)
    assert f"### skills: {FORMULA}" in text
    assert "verdicts + findings" in text
    with output.console.capture() as captured:
        output.show_round(result, output.OutputFormat.TABLE, None)
    assert f"skills — {FORMULA}" in captured.get()


def test_equal_scores_paid_unequally_are_explained(result: RoundResult) -> None:
    """The top-3 split is said everywhere; a tie among the paid says how it was broken."""
    assert result.card is not None
    shares = " / ".join(f"{s:.2f}" for s in SPEC.top_split)
    for text in (render_html(result), render_markdown(result)):
        assert f"top 3 eligible agents, {shares}" in text
    scores = result.card.scores["repositories"]
    first, second = sorted(scores, key=lambda a: scores[a].rank or 99)[:2]
    tied = {**scores, second: msgspec.structs.replace(scores[second], score=scores[first].score)}
    card = msgspec.structs.replace(result.card, scores={**result.card.scores, "repositories": tied})
    html = render_html(replace(result, card=card))
    section = html.split('id="track-repositories"', 1)[1]
    assert "equal scores are ordered by a hash of the round seed" in section
    assert "equal scores are ordered" not in html.split('id="track-repositories"', 1)[0]
