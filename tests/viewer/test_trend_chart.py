"""A trend chart spans its card on a desktop and keeps its text readable on a phone: the
viewer draws it twice, and the page shows the drawing that fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import browser
from assay.report import svg
from assay.viewer import pages

# How wide the shown chart is against its card, and the size its text is drawn at.
MEASURE = """
const card = document.querySelector(".card");
const shown = [...card.querySelectorAll("svg.chart")]
  .filter(s => s.getBoundingClientRect().width > 0);
const chart = shown[0];
const scale = chart.getBoundingClientRect().width / chart.viewBox.baseVal.width;
return [shown.length, chart.getBoundingClientRect().width / card.clientWidth, 12 * scale,
        document.documentElement.scrollWidth];
"""


def _page(tmp_path: Path) -> Path:
    rounds = [f"round-{n:04d}" for n in range(1, 13)]
    series = [svg.LineSeries("skills", tuple(n / 12 for n in range(12)))]
    chart = pages.trend_chart(rounds, series, label="score per track over rounds")
    page = pages._ENV.from_string(
        '{% extends "base.html.j2" %}{% block body %}<div class="card">{{ chart }}</div>'
        "{% endblock %}"
    ).render(chart=chart)
    path = tmp_path / "trend.html"
    path.write_text(page)
    return path


@pytest.mark.slow
@pytest.mark.xdist_group("chromium")  # one headless Chromium at a time
@pytest.mark.skipif(not browser.AVAILABLE, reason="chromium or its driver is missing")
def test_a_trend_spans_a_desktop_card_and_reads_on_a_phone(tmp_path: Path) -> None:
    page = _page(tmp_path)
    with browser.chromium(tmp_path / "profile") as driver:
        seen: dict[int, Any] = {}
        for width in (1400, 420):
            browser.show(driver, page.as_uri(), width)
            seen[width] = driver.execute_script(MEASURE)
    charts, share, text_px, scrolled = seen[1400]
    assert charts == 1 and share > 0.85 and text_px >= 11, seen
    charts, share, text_px, scrolled = seen[420]
    assert charts == 1 and text_px >= 10 and scrolled == 420, seen
