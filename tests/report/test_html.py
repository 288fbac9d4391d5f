"""The HTML report's structure: every plot present with the right number of marks, safely."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from report_fixtures import (
    HOSTILE_DETAIL,
    HOSTILE_NAME,
    HOSTILE_REASON,
    HOSTILE_TASK,
    LONG_NAME,
    abstained_result,
    build_result,
)
from report_markup import Page, parse

from assay.records.round import RoundResult
from assay.report import svg
from assay.report.html import HtmlFormat, render_html, write_html

Render = Callable[[RoundResult], str]
TRACKS = ("skills", "mcp_servers", "packages", "repositories")


@pytest.fixture(scope="module")
def html(round_result: RoundResult, render: Render) -> str:
    return render(round_result)


@pytest.fixture(scope="module")
def page(html: str) -> Page:
    return parse(html)


def _tasks(result: RoundResult, track: str) -> int:
    return len(result.plan.draw()[track])


def test_every_track_has_a_section_with_its_plots(page: Page, round_result: RoundResult) -> None:
    agents = len(round_result.agents)
    assert agents >= 4
    for track in TRACKS:
        section = f"track-{track}"
        rects = page.count("rect", section)
        # One score bar per agent; on a behavioural track split in its verdict and findings parts.
        parts = ("score",) if track == "repositories" else ("verdict", "findings")
        assert all(rects[part] == agents for part in parts), track
        assert len(page.find("line", "threshold-line", section)) == 1, track
        cells = page.find("g", "cell", section)
        assert len(cells) == agents * _tasks(round_result, track), track
        assert page.find("table", "ranking", section), track


def test_confusion_heatmaps_only_on_behavioural_tracks(
    page: Page, round_result: RoundResult
) -> None:
    agents = len(round_result.agents)
    for track in TRACKS[:3]:
        assert len(page.find("g", "cm-cell", f"track-{track}")) == 4 * agents
    assert not page.find("g", "cm-cell", "track-repositories")
    # Each matrix's four counts add up to the tasks of the track.
    titles = page.titles("cm-cell", "track-skills")[:4]
    counts = [int(re.search(r": (\d+) task", t).group(1)) for t in titles]  # type: ignore[union-attr]
    assert sum(counts) == _tasks(round_result, "skills")


def test_threshold_line_sits_at_the_track_threshold(page: Page) -> None:
    # The plot runs from x=BAR_LEFT (0.0) over BAR_PLOT (to 1.0); skills' threshold is 0.20.
    line = page.find("line", "threshold-line", "track-skills")[0]
    assert float(line.attrs["x1"]) == pytest.approx(svg.BAR_LEFT + 0.2 * svg.BAR_PLOT)
    repositories = page.find("line", "threshold-line", "track-repositories")[0]
    assert float(repositories.attrs["x1"]) == pytest.approx(svg.BAR_LEFT + 0.5 * svg.BAR_PLOT)


def test_grid_cells_are_correct_wrong_or_failed_and_repositories_shaded(page: Page) -> None:
    behavioural = page.count("g", "track-skills")
    assert behavioural["correct"] > 0 and behavioural["wrong"] > 0
    repositories = page.count("g", "track-repositories")
    assert repositories["scored"] > 0 and repositories["correct"] == 0
    cells = page.find("rect", section="track-repositories")
    fills = {e.attrs["fill"] for e in cells if "cell" in e.parent_classes}
    assert len(fills) > 3  # F2 shading, not one flat colour


def test_every_cell_tooltip_names_task_label_verdict_and_reps(page: Page) -> None:
    for title in page.titles("cell", "track-skills"):
        assert title.startswith("task skills-")
        assert "(malicious)" in title or "(safe)" in title
        assert "verdict" in title or "FAILED" in title
        assert "rep 0:" in title
    for title in page.titles("cell", "track-repositories"):
        assert "F2" in title or "FAILED" in title


def test_failed_reps_carry_their_reason_on_hover(page: Page, round_result: RoundResult) -> None:
    tooltips = "\n".join(page.titles("cell"))
    assert f"failed ({HOSTILE_REASON})" in tooltips
    assert "failed (cpu_budget)" in tooltips or "failed (crash)" in tooltips
    # The failure breakdown has one stacked bar per agent that failed at least once.
    assert round_result.card is not None
    for track, scores in round_result.card.scores.items():
        failing = [s for s in scores.values() if s.failed_reps]
        rows = page.find("g", "failure-row", f"track-{track}")
        assert len(rows) == len(failing)
        segments = page.find("rect", "segment", f"track-{track}")
        assert len(segments) == sum(len(s.failure_reasons) for s in failing)


def test_failed_reps_are_listed_with_their_detail_and_cpu(
    html: str, page: Page, round_result: RoundResult
) -> None:
    """Visible without hovering: every failed rep (up to the cap), its detail and CPU."""
    failed = round_result.diagnostics.failed()
    assert failed
    rows = page.find("table", "failed-reps")
    assert rows
    shown = sum(min(200, sum(d.track == t for d in failed)) for t in TRACKS)
    assert html.count("0.25 / ") == shown
    assert HOSTILE_DETAIL not in html  # escaped...
    assert "&lt;svg onload=alert(3)&gt;" in html  # ...and still there to read


def test_no_external_resources(html: str, page: Page) -> None:
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b", html)
    linked = [e for e in page.elements if {"src", "href", "xlink:href"} & set(e.attrs)]
    # Only in-page links (the section navigation) are allowed.
    assert all(e.attrs.get("href", "").startswith("#") and set(e.attrs) == {"href"} for e in linked)
    assert "url(" not in html and "@import" not in html


def test_hostile_text_is_escaped_everywhere(html: str, page: Page) -> None:
    assert HOSTILE_NAME not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html and "<img src=x" not in html
    assert "<i>0</i>" not in html  # the validator id is escaped too
    # ...and still reads correctly once parsed.
    assert any(HOSTILE_TASK in t for t in page.titles("cell", "track-skills"))
    assert not page.find("b") and not page.find("img") and not page.find("script")


def test_long_names_are_cut_with_the_full_name_on_hover(page: Page) -> None:
    labels = [e.text for e in page.find("td", "name", "track-skills")]
    assert any(label.startswith(LONG_NAME[:21] + "…") for label in labels)
    assert not any(LONG_NAME in label for label in labels)
    assert any(LONG_NAME in t for t in page.titles("bar-row", "track-skills"))


def test_header_has_round_identity_and_the_draw(html: str, round_result: RoundResult) -> None:
    plan = round_result.plan
    for value in (round_result.round_id, plan.round_seed, plan.mechanism_digest):
        assert value in html
    assert f'version <span class="mono">{plan.mechanism_version}</span>' in html
    for tasks in plan.draw().values():
        assert all(f"<code>{t}</code>" in html for t in tasks if "<" not in t)


def test_weight_vector_lists_round_and_written_weights(
    page: Page, round_result: RoundResult
) -> None:
    rows = page.find("tr", section="weights")[1:]
    assert len(rows) == len(set(round_result.weights) | set(round_result.round_weights))
    assert len(page.find("rect", "ema", "weights")) == len(rows)
    assert any("(earlier round)" in t for t in page.titles("bar-row", "weights"))


def test_abstained_round_explains_itself(render: Render) -> None:
    result = abstained_result()
    page = parse(render(result))
    banner = [e for e in page.elements if e.attrs.get("id") == "abstention"]
    assert banner and "sandbox unsound" in "".join(
        e.text for e in page.elements if e.tag in {"div", "strong"}
    )
    assert not page.find("section", "track")
    assert page.find("p", "empty", "weights")
    assert HOSTILE_NAME not in render(result)


def test_eval_of_one_agent_on_one_track(render: Render) -> None:
    result = build_result(agents=1, tracks=("packages",))
    page = parse(render(result))
    assert [e.attrs["id"] for e in page.find("section", "track")] == ["track-packages"]
    assert len(page.find("rect", "verdict")) == len(page.find("rect", "findings")) == 1
    assert len(page.find("g", "cell")) == _tasks(result, "packages")
    assert len(page.find("g", "cm-cell")) == 4


@pytest.mark.slow
def test_eighty_agents_by_fifty_tasks_stay_readable(render: Render) -> None:
    # One track is the grid in question; the other three would only lengthen the page.
    result = build_result(agents=80, scale=1.0, tracks=("skills",))
    page = parse(render(result))
    assert len(page.find("g", "cell", "track-skills")) == 80 * 50
    grid = [
        e for e in page.find("svg", section="track-skills") if "outcomes" in e.attrs["aria-label"]
    ]
    width = float(grid[0].attrs["width"])
    assert width <= 1300  # fits the page: cells shrink as tasks grow


def test_write_html_writes_one_file(tmp_path: Path, round_result: RoundResult) -> None:
    target = tmp_path / "out" / "report.html"
    write_html(round_result, target)
    assert target.read_text(encoding="utf-8") == HtmlFormat().render(round_result)
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]


def test_summary_and_navigation_come_before_the_first_ranking(html: str) -> None:
    assert html.index('id="summary"') < html.index('class="ranking"')
    assert html.index('id="weights"') < html.index('class="ranking"')
    assert html.index('id="details"') > html.index('class="ranking"')  # metadata last
    for anchor in ("#summary", "#weights", "#details", *(f"#track-{t}" for t in TRACKS)):
        assert f'href="{anchor}"' in html


def test_per_task_tables_show_reps_and_matched_or_missed_truth(
    page: Page, round_result: RoundResult
) -> None:
    assert round_result.card is not None
    tables = page.find("table", "tasks", "track-repositories")
    assert len(tables) == len(round_result.card.scores["repositories"])
    marks = [e.attrs.get("class") for e in page.elements if e.tag == "li"]
    # synthetic agents find some, miss some and report some noise
    assert {"matched", "missed", "extra"} <= set(marks)
    lines = [e.text for e in page.elements if e.tag == "li"]
    assert any(" lines apart, " in text for text in lines)  # a check, with its reason
    assert any(text.startswith("✓ file ") for text in lines)
    assert any("failed " in e.text and HOSTILE_DETAIL in e.text for e in page.elements)


def test_ranking_shows_cpu_against_the_budget(page: Page) -> None:
    cells = [e.text for e in page.find("td", section="track-packages")]
    assert any(text.endswith(" of 30 s") and text.startswith("mean ") for text in cells)


def test_weights_over_rounds_drawn_when_the_store_has_several(render: Render) -> None:
    from dataclasses import replace

    result = build_result(agents=3, scale=0.1)
    history = (("round-0001", {a: 1 / 3 for a in result.agents}), ("r-0007", result.weights))
    page = parse(render(replace(result, weight_history=history)))
    assert len(page.find("g", "line", "weights")) == len(result.weights)
    assert not parse(render(result)).find("g", "line")


def test_an_eval_report_is_titled_as_an_eval(render: Render) -> None:
    from dataclasses import replace

    html = render(replace(build_result(agents=1, tracks=("skills",)), kind="eval"))
    assert "<title>assay eval" in html and "no weights were written" not in html
    assert 'id="weights"' not in html


def test_control_characters_show_as_visible_escapes() -> None:
    """ESC, CSI and bidi overrides from agent names and detonation reasons are shown,
    never passed to whatever displays the report."""
    result = build_result(agents=3, scale=0.1)
    hostile = "fake\x1b[2J\x9b31m\u202egnp.exe"
    names = {h: f"{n} {hostile}" for h, n in result.agents.items()}
    result = replace(
        result, agents=names, incomplete_detonations={"skills/x": [f"harness log {hostile}"]}
    )
    html = render_html(result)
    assert not re.search("[\x1b\x9b\u202e]", html)
    assert "fake\\x1b[2J\\x9b31m\\u202egnp.exe" in html
    assert 'id="incomplete-detonations"' in html
