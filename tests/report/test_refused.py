"""A refused agent never ran: every view shows it once, as refused with the reason, outside
the ranking (not ranked with MCC −1.000, a red matrix and a column of `agent_invalid`)."""

from __future__ import annotations

import re

import msgspec
import pytest
from report_fixtures import build_result

from assay.cli import output
from assay.records.agent import short_hash
from assay.records.round import RoundResult
from assay.report.html import render_html
from assay.report.markdown import render_markdown
from assay.store.sqlite import RoundSummary
from assay.validator.browse import RoundTrend
from assay.viewer.pages import _best

WHY = "a copy: 1.000 similar to agent-0, submitted first"


@pytest.fixture(scope="module")
def result() -> RoundResult:
    return build_result(agents=4, scale=0.2, refused={3: {"skills": WHY}})


def _copier(result: RoundResult) -> str:
    (agent,) = result.plan.refused
    return agent


def test_the_html_report_lists_a_refused_agent_apart_from_the_ranking(
    result: RoundResult,
) -> None:
    page = render_html(result)
    skills = page.split('id="track-skills"', 1)[1].split('<section class="track"', 1)[0]
    ranking = skills.split('<table class="ranking">', 1)[1].split("</table>", 1)[0]
    copier = short_hash(_copier(result))
    assert copier not in ranking
    before, refused = skills.split('<table class="refused">', 1)
    refused, after = refused.split("</table>", 1)
    assert copier in refused and WHY in refused
    assert copier not in before + after, "shown once: no matrix, grid row, task table or reps"
    assert "agent_invalid" not in skills
    # On the track it was not refused on, it is ranked as any agent.
    packages = page.split('id="track-packages"', 1)[1].split("</table>", 1)[0]
    assert copier in packages


def test_the_markdown_report_lists_a_refused_agent_apart_from_the_ranking(
    result: RoundResult,
) -> None:
    text = render_markdown(result)
    skills = text.split("### skills", 1)[1].split("\n### ", 1)[0]
    copier = short_hash(_copier(result))
    ranked = [line for line in skills.splitlines() if line.startswith("|")]
    assert not any(copier in line for line in ranked)
    (line,) = [line for line in skills.splitlines() if copier in line]
    assert line.startswith("- refused") and "submitted first" in line
    failures = text.split("### Failed reps", 1)[-1]
    assert "agent\\_invalid" not in failures and "agent_invalid" not in failures


def test_the_terminal_lists_a_refused_agent_under_its_track_once(result: RoundResult) -> None:
    with output.console.capture() as captured:
        output.show_round(result, output.OutputFormat.TABLE, None)
    text = captured.get()
    skills = text.split("skills —", 1)[1].split("this round's weights", 1)[0]
    copier = short_hash(_copier(result))
    (line,) = [line for line in skills.splitlines() if copier in line]
    assert re.search(rf"refused .*{copier}.*: {re.escape(WHY)}", line)
    assert "agent_invalid" not in skills
    assert text.count(WHY) == 1


def test_the_viewer_never_names_a_refused_agent_a_tracks_best(result: RoundResult) -> None:
    assert result.card is not None
    copier = _copier(result)
    skills = result.card.scores["skills"]
    # Whatever its stored row says, the refused agent is not ranked against the others.
    inflated = {**skills, copier: msgspec.structs.replace(skills[copier], score=1.0)}
    card = msgspec.structs.replace(result.card, scores={**result.card.scores, "skills": inflated})
    summary = RoundSummary("r-1", "completed", None, "5eed", ("skills",), 4, 0, {})
    best = _best([RoundTrend(summary, card, result.plan.refused)])["r-1"]["skills"]
    assert best.agent != copier
    assert best.score == max(s.score for a, s in skills.items() if a != copier)
