"""Charts that read: the threshold line is drawn under the agents' names, and a trend's
x labels never overlap (the last round is always named)."""

from __future__ import annotations

import re
from itertools import pairwise

from assay.report import svg


def test_the_threshold_line_is_under_every_agent_name() -> None:
    rows = [
        svg.BarRow(label=f"agent-{i} · 0123456789ab", tooltip="", values=(0.6,)) for i in range(3)
    ]
    chart = str(svg.bar_chart(rows, series=("score",), threshold=0.1, label="scores"))
    # Painted first, so each name (with its white halo) covers the line where they cross.
    assert chart.index('class="threshold"') < chart.index('class="bar-row"')
    assert chart.count('paint-order="stroke"') >= 2 * len(rows)  # names and values haloed


def _x_labels(chart: str) -> list[float]:
    return [
        float(x)
        for x in re.findall(
            r'<text x="([\d.]+)" y="\d+" text-anchor="middle" fill="#666"><title>', chart
        )
    ]


LABEL_ROOM = 79.5  # px: a round id's label, 12 characters of 12 px text


def test_trend_x_labels_never_overlap() -> None:
    for rounds in range(2, 40):
        ids = [f"round-{n:04d}" for n in range(1, rounds + 1)]
        chart = str(svg.line_chart(ids, [svg.LineSeries("a", (0.5,) * rounds)], label="t"))
        xs = _x_labels(chart)
        assert all(b - a >= LABEL_ROOM for a, b in pairwise(xs)), rounds
        assert f"<title>{ids[-1]}</title>" in chart and f"<title>{ids[0]}</title>" in chart
