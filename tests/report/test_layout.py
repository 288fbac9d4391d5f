"""The HTML report laid out by a real headless Chromium (tests/browser.py) at a desktop's
1400 px and a phone's 420 px: nothing sticks out sideways, the ranking keeps the agent
and ELIGIBLE in view with one-line rows, and chart labels are drawn at a readable size.
A screenshot of each width is saved and its path printed (run with `-s` to see it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.records.round import RoundResult
from assay.report.html import write_html
from browser import AVAILABLE, chromium, resize, show

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("chromium"),  # one headless Chromium at a time
    pytest.mark.skipif(not AVAILABLE, reason="chromium or its driver is missing"),
]

# What the page measures of itself, once laid out at the emulated width.
MEASURE = """
const width = window.innerWidth;
const outside = (el) => {
  const box = el.getBoundingClientRect();
  return box.right > width + 0.5 || box.left < -0.5;
};
const cards = [...document.querySelectorAll(".card, section, nav.sections, header, footer")];
const ranking = [...document.querySelectorAll("table.ranking")].flatMap((table) => {
  const frame = table.closest(".card").getBoundingClientRect();
  return [...table.rows].map((row) => {
    const agent = row.cells[1].getBoundingClientRect();
    const eligible = row.cells[row.cells.length - 1].getBoundingClientRect();
    const seen = (box) => box.left >= frame.left - 0.5 && box.right <= frame.right + 0.5;
    return {height: row.getBoundingClientRect().height, agent: seen(agent),
            eligible: seen(eligible), text: row.cells[row.cells.length - 1].textContent.trim()};
  });
});
// A chart may be wider than its card only where the card scrolls (the outcome grid).
const charts_out = [...document.querySelectorAll("svg.chart")].filter((chart) => {
  const card = chart.closest(".card");
  const box = chart.getBoundingClientRect(), frame = card.getBoundingClientRect();
  const inside = box.right <= frame.right + 0.5 && box.left >= frame.left - 0.5;
  return !inside && getComputedStyle(card).overflowX !== "auto";
}).map((chart) => chart.getAttribute("aria-label"));
const labels = [...document.querySelectorAll("svg.chart text")].map((text) => {
  const m = text.getScreenCTM();
  return parseFloat(getComputedStyle(text).fontSize) * Math.hypot(m.a, m.b);
});
return {
  width: width,
  page: document.documentElement.scrollWidth,
  body: [document.body.scrollWidth, document.body.clientWidth],
  sticking_out: cards.filter(outside).map((el) => el.className || el.tagName),
  ranking: ranking,
  charts_out: charts_out,
  smallest_label: Math.min(...labels),
  labels: labels.length,
  height: document.documentElement.scrollHeight,
};
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, round_result: RoundResult) -> Path:
    path = tmp_path_factory.mktemp("layout") / "round.html"
    write_html(round_result, path)
    return path


def laid_out(browser: Any, page: Path, width: int) -> dict[str, Any]:
    show(browser, page.as_uri(), width)
    measured: dict[str, Any] = browser.execute_script(MEASURE)
    return measured


def screenshot(browser: Any, width: int, height: int, path: Path) -> Path:
    """The page's top `height` px at `width`, saved as a PNG."""
    resize(browser, width, height)
    browser.save_screenshot(str(path))
    return path


def shots_dir(tmp_path: Path) -> Path:
    """Where the screenshots go: $ASSAY_SCREENSHOTS if set (to keep them), else the test's tmp."""
    folder = Path(os.environ.get("ASSAY_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("width", [1400, 420])
def test_report_fits_the_screen(browser: Any, report: Path, tmp_path: Path, width: int) -> None:
    measured = laid_out(browser, report, width)
    shot = screenshot(
        browser, width, min(measured["height"], 6000), shots_dir(tmp_path) / f"report-{width}.png"
    )
    print(f"\nscreenshot at {width} px: {shot}")
    assert measured["width"] == width
    assert measured["page"] <= width, "the page scrolls sideways"
    assert measured["body"][0] <= measured["body"][1], "the body is wider than the screen"
    assert measured["sticking_out"] == [], "these stick out of the screen"
    assert measured["charts_out"] == [], "these charts stick out of a card that does not scroll"
    rows = measured["ranking"]
    assert rows and all(r["agent"] and r["eligible"] for r in rows), "agent or ELIGIBLE cut"
    assert {r["text"] for r in rows} == {"eligible", "yes", "no"}  # the whole column, pinned
    assert max(r["height"] for r in rows) < 40, "ranking rows wrap"
    assert measured["labels"] > 100 and measured["smallest_label"] >= 9.5, "chart text too small"
