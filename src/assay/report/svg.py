"""Inline SVG charts for the HTML report, drawn in Python so the file needs no scripts.

Every piece of text goes through `Markup.format`, which escapes its arguments:
agent names, task ids and failure reasons are hostile input. Hover text uses SVG
`<title>` elements, which browsers show as native tooltips.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from markupsafe import Markup

from assay.records.scorecard import ConfusionView

CellState = Literal["correct", "wrong", "failed", "scored"]

LABEL_WIDTH = 250  # the outcome grid's room for a truncated agent name and its short hash
ROW_HEIGHT = 20
# Bar charts put each agent's name above its bar, so they are drawn narrow enough for a
# phone's screen (about 380 px) at close to their drawn size: their labels stay 11-12 px
# there instead of shrinking with a wide label column beside the plot.
BAR_LEFT = 16  # half of a tick label: "0.00" is centred on the axis's start
BAR_PLOT = 290
BAR_ROW = 36  # a label line and the bar band below it
BAR_LABEL = 13  # baseline of the label within its row
FONT = 'font-family="system-ui, sans-serif" font-size="12"'

# Categorical colours for failure reasons, distinguishable and colour-blind friendly.
PALETTE = (
    "#e69f00",
    "#56b4e9",
    "#009e73",
    "#cc79a7",
    "#0072b2",
    "#d55e00",
    "#f0e442",
    "#999999",
    "#882255",
    "#44aa99",
)
PARTIAL_COLOUR = "#f5a623"  # the notch must show on green, red and dark blue cells alike
CELL_COLOURS = {"correct": "#2e9e5b", "wrong": "#d64541", "failed": "#4a4a4a"}


def tag(template: str, *args: object) -> Markup:
    """An SVG fragment with every argument escaped."""
    return Markup(template).format(*args)


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mix(light: str, dark: str, amount: float) -> str:
    """The colour `amount` (0..1) of the way from `light` to `dark`."""
    amount = min(1.0, max(0.0, amount))
    channels = (
        round(int(light[i : i + 2], 16) * (1 - amount) + int(dark[i : i + 2], 16) * amount)
        for i in (1, 3, 5)
    )
    return "#" + "".join(f"{c:02x}" for c in channels)


def _svg(width: float, height: float, body: Sequence[Markup], label: str) -> Markup:
    head = tag(
        '<svg class="chart" role="img" aria-label="{}" '
        'width="{}" height="{}" viewBox="0 0 {} {}" fill="#1d2330" ' + FONT + ">",
        label,
        width,
        height,
        width,
        height,
    )
    return head + Markup("").join(body) + Markup("</svg>")


# -- bar charts ----------------------------------------------------------------------


@dataclass(frozen=True)
class BarRow:
    label: str
    tooltip: str
    values: tuple[float, ...]  # one per series, each in 0..1
    kind: str = ""  # extra CSS class, e.g. eligible / ineligible


def _axis(left: float, width: float, top: float, bottom: float) -> list[Markup]:
    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + tick * width
        parts.append(
            tag(
                '<line class="grid" x1="{:.1f}" x2="{:.1f}" y1="{}" y2="{}" stroke="#e3e3e3"/>'
                '<text x="{:.1f}" y="{}" text-anchor="middle" fill="#666">{:.2f}</text>',
                x,
                x,
                top,
                bottom,
                x,
                top - 6,
                tick,
            )
        )
    return parts


def _row_label(y: float, label: str) -> Markup:
    """An agent's name on the line above its bar."""
    return tag(
        '<text class="row-label" x="{}" y="{:.1f}" paint-order="stroke" stroke="#fff" '
        'stroke-width="3">{}</text>',  # the halo keeps it legible over grid lines
        BAR_LEFT,
        y + BAR_LABEL,
        label,
    )


def _band(y: float) -> tuple[float, float]:
    """Top and height of the bars of the row starting at `y`."""
    return y + BAR_LABEL + 5, BAR_ROW - BAR_LABEL - 9


def bar_chart(
    rows: Sequence[BarRow],
    *,
    series: Sequence[str],
    threshold: float | None = None,
    label: str,
    plot_width: int = BAR_PLOT,
    stacked: bool = False,
) -> Markup:
    """Horizontal bars on a 0..1 axis; several series share a row, one above the other,
    or (`stacked`) end to end in one bar that adds up to the row's total."""
    top = 28
    bottom = top + len(rows) * BAR_ROW
    body = _axis(BAR_LEFT, plot_width, top, bottom)
    if threshold is not None:  # under the rows: the names' halo covers it
        body.append(_threshold(BAR_LEFT + threshold * plot_width, top, bottom, threshold))
    for i, row in enumerate(rows):
        body.append(_bar_row(row, top + i * BAR_ROW, series, plot_width, stacked))
    room = 24 if threshold is not None else 8  # the threshold's label sits under the plot
    values_room = 140 if stacked else 46 * len(series)  # "0.469 = 0.375 + 0.094"
    width = max(BAR_LEFT + plot_width + 24 + values_room, _longest(rows))
    return _svg(width, bottom + room, body, label)


def _bar_row(
    row: BarRow, y: float, series: Sequence[str], plot_width: int, stacked: bool
) -> Markup:
    band_top, band = _band(y)
    height = band if stacked else band / len(series)
    parts = [tag('<g class="bar-row"><title>{}</title>', row.tooltip), _row_label(y, row.label)]
    start = 0.0
    for s, value in enumerate(row.values):
        value = max(0.0, min(1.0, value))
        parts.append(
            tag(
                '<rect class="bar {} {}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/>',
                series[s],
                row.kind,
                BAR_LEFT + start * plot_width,
                band_top + (0.0 if stacked else s * height),
                value * plot_width,
                height,
            )
        )
        start = start + value if stacked else 0.0
    end = sum(row.values) if stacked else max(row.values, default=0.0)
    text = (
        f"{sum(row.values):.3f} = " + " + ".join(f"{v:.3f}" for v in row.values)
        if stacked
        else " / ".join(f"{v:.3f}" for v in row.values)
    )
    parts.append(
        tag(
            '<text x="{:.1f}" y="{:.1f}" dominant-baseline="middle" fill="#333" '
            'paint-order="stroke" stroke="#fff" stroke-width="3">{}</text>',
            BAR_LEFT + min(1.0, end) * plot_width + 6,
            band_top + band / 2,
            text,
        )
    )
    return Markup("").join(parts) + Markup("</g>")


def _longest(rows: Sequence[BarRow] | Sequence[FailureRow]) -> float:
    """Room for the longest label line (at about 7 px a character of 12 px text)."""
    return BAR_LEFT + 7.0 * max((len(r.label) for r in rows), default=0)


def _threshold(x: float, top: float, bottom: float, value: float) -> Markup:
    return tag(
        '<g class="threshold"><title>eligibility threshold {:.2f}</title>'
        '<line class="threshold-line" x1="{:.1f}" x2="{:.1f}" y1="{}" y2="{}" '
        'stroke="#c0392b" stroke-width="2" stroke-dasharray="6 3"/>'
        '<text x="{:.1f}" y="{}" text-anchor="{}" fill="#c0392b" font-weight="600">'
        "threshold {:.2f}</text></g>",
        value,
        x,
        x,
        top - 2,
        bottom + 2,
        x + 4 if value <= 0.6 else x - 4,
        bottom + 16,
        "start" if value <= 0.6 else "end",
        value,
    )


# -- confusion matrix ----------------------------------------------------------------


def confusion_heatmap(matrix: ConfusionView, label: str) -> Markup:
    """2×2 cells, rows the truth and columns the verdict; darker means more tasks."""
    # Shaded against the fullest cell, so a perfect diagonal reads as fully dark.
    fullest = max(1, matrix.tp, matrix.tn, matrix.fp, matrix.fn)
    cells = (
        ("TP", matrix.tp, 0, 0, True, "malicious, flagged (WARN/BLOCK)"),
        ("FN", matrix.fn, 1, 0, False, "malicious, allowed"),
        ("FP", matrix.fp, 0, 1, False, "safe, flagged (WARN/BLOCK)"),
        ("TN", matrix.tn, 1, 1, True, "safe, allowed"),
    )
    left, top, size = 66, 36, 48
    body = [
        tag('<text x="{}" y="14" text-anchor="middle" fill="#666">verdict</text>', left + size),
        tag(
            '<text x="{}" y="30" text-anchor="middle" font-size="10">flagged</text>',
            left + size / 2,
        ),
        tag(
            '<text x="{}" y="30" text-anchor="middle" font-size="10">allowed</text>',
            left + 1.5 * size,
        ),
        tag('<text x="{}" y="{}" text-anchor="end">malicious</text>', left - 6, top + size / 2),
        tag('<text x="{}" y="{}" text-anchor="end">safe</text>', left - 6, top + 1.5 * size),
    ]
    for name, count, col, row, right, meaning in cells:
        shade = count / fullest
        fill = mix("#f4faf6", "#1e7d46", shade) if right else mix("#fdf2f2", "#b52a2a", shade)
        x, y = left + col * size, top + row * size
        body.append(
            tag(
                '<g class="cm-cell"><title>{}: {} task(s), {}</title>'
                '<rect x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#fff"/>'
                '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="15" '
                'font-weight="600">{}</text>'
                '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="10">{}</text></g>',
                name,
                count,
                meaning,
                x,
                y,
                size,
                size,
                fill,
                x + size / 2,
                y + size / 2 + 2,
                "#fff" if shade > 0.55 else "#222",
                count,
                x + size / 2,
                y + size - 7,
                "#fff" if shade > 0.55 else "#555",
                name,
            )
        )
    return _svg(left + 2 * size + 8, top + 2 * size + 4, body, label)


# -- agent × task grid ---------------------------------------------------------------


@dataclass(frozen=True)
class GridCell:
    state: CellState
    tooltip: str
    shade: float | None = None  # repositories: the task's F2
    partial: bool = False  # some, not all, reps failed


@dataclass(frozen=True)
class GridRow:
    label: str
    tooltip: str
    cells: tuple[GridCell, ...]


def _cell_fill(cell: GridCell) -> str:
    if cell.state == "scored":
        return mix("#eef2f7", "#1f5fa8", cell.shade or 0.0)
    return CELL_COLOURS[cell.state]


def _grid_cell(x: float, y: float, size: float, cell: GridCell) -> Markup:
    rect = tag(
        '<g class="cell {}"><title>{}</title>'
        '<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" stroke="{}" rx="2"/>',
        cell.state,
        cell.tooltip,
        x,
        y,
        size - 2,
        size - 2,
        _cell_fill(cell),
        # An F2 of 0 is nearly white; the outline keeps the cell visible on the page.
        "#c9d3e0" if cell.state == "scored" else "none",
    )
    if cell.partial:
        # A corner notch: the task still counted, but some of its reps failed.
        corner = x + size - 2
        rect += tag(
            '<path class="partial" d="M{:.1f} {:.1f} h-{:.1f} l{:.1f} {:.1f} z" fill="{}"/>',
            corner,
            y,
            size / 2.5,
            size / 2.5,
            size / 2.5,
            PARTIAL_COLOUR,
        )
    return rect + Markup("</g>")


def outcome_grid(tasks: Sequence[str], rows: Sequence[GridRow], label: str) -> Markup:
    """One row per agent, one column per task; cells scale down as tasks grow."""
    size = max(10.0, min(20.0, 1000 / max(1, len(tasks))))
    top = 120  # rotated task ids sit above the columns
    body = []
    for col, task in enumerate(tasks):
        x = LABEL_WIDTH + col * size + size / 2
        body.append(
            tag(
                '<text class="task-id" transform="translate({:.1f} {}) rotate(-60)" '
                'font-size="10"><title>{}</title>{}</text>',
                x,
                top - 6,
                task,
                truncate(task, 22),
            )
        )
    for r, row in enumerate(rows):
        y = top + r * size
        body.append(
            tag(
                '<text x="{}" y="{:.1f}" text-anchor="end" dominant-baseline="middle" '
                'font-size="11"><title>{}</title>{}</text>',
                LABEL_WIDTH - 8,
                y + size / 2 - 1,
                row.tooltip,
                row.label,
            )
        )
        body.extend(
            _grid_cell(LABEL_WIDTH + c * size, y, size, cell) for c, cell in enumerate(row.cells)
        )
    width = LABEL_WIDTH + len(tasks) * size + 40
    return _svg(width, top + len(rows) * size + 6, body, label)


# -- failure breakdown ---------------------------------------------------------------


@dataclass(frozen=True)
class FailureRow:
    label: str
    tooltip: str
    counts: dict[str, int]  # reason -> failed reps
    reps: int  # all reps this agent ran on the track


def reason_colours(reasons: Sequence[str]) -> dict[str, str]:
    return {reason: PALETTE[i % len(PALETTE)] for i, reason in enumerate(sorted(reasons))}


def _count_axis(left: float, width: float, top: float, bottom: float, most: int) -> Markup:
    """Where the bars end is a count of reps, so say so: 0 at the left, the worst at the right."""
    return tag(
        '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#c8c8c8"/>'
        '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#e3e3e3"/>'
        '<text x="{}" y="{}" text-anchor="middle" fill="#666">0</text>'
        '<text x="{}" y="{}" text-anchor="middle" fill="#666">{} failed reps</text>',
        left,
        left,
        top,
        bottom,
        left + width,
        left + width,
        top,
        bottom,
        left,
        top - 8,
        left + width,
        top - 8,
        most,
    )


def failure_bars(rows: Sequence[FailureRow], colours: dict[str, str], label: str) -> Markup:
    """A stacked bar per agent: its failed reps split by reason, scaled to the worst agent."""
    plot_width, top = BAR_PLOT - 30, 24
    most = max((sum(r.counts.values()) for r in rows), default=0) or 1
    bottom = top + len(rows) * BAR_ROW
    body = [_count_axis(BAR_LEFT, plot_width, top, bottom, most)]
    for i, row in enumerate(rows):
        y = top + i * BAR_ROW
        band_top, band = _band(y)
        failed = sum(row.counts.values())
        parts = [tag('<g class="failure-row"><title>{}</title>', row.tooltip)]
        parts.append(_row_label(y, row.label))
        x = float(BAR_LEFT)
        for reason, count in sorted(row.counts.items()):
            width = count / most * plot_width
            parts.append(
                tag(
                    '<rect class="segment" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" '
                    'fill="{}"><title>{}: {} × {}</title></rect>',
                    x,
                    band_top,
                    width,
                    band,
                    colours[reason],
                    row.label,
                    reason,
                    count,
                )
            )
            x += width
        parts.append(
            tag(
                '<text x="{:.1f}" y="{:.1f}" dominant-baseline="middle" fill="#333">'
                "{} of {} reps</text></g>",
                x + 6,
                band_top + band / 2,
                failed,
                row.reps,
            )
        )
        body.append(Markup("").join(parts))
    width = max(BAR_LEFT + plot_width + 100, _longest(rows))
    return _svg(width, bottom + 6, body, label)


# -- line chart ----------------------------------------------------------------------


@dataclass(frozen=True)
class LineSeries:
    label: str
    values: tuple[float, ...]  # one per x position, each in 0..1


X_LABEL_ROOM = 80  # px a round id's x label takes (12 characters of 12 px text)


def _labelled(count: int, step: float) -> list[int]:
    """The x positions that get a label: evenly spaced so no two overlap, the last one
    always (in place of the one before it when they would touch)."""
    every = max(1, math.ceil(X_LABEL_ROOM / step))
    shown = list(range(0, count, every))
    if shown and shown[-1] != count - 1:
        if (count - 1 - shown[-1]) * step < X_LABEL_ROOM and len(shown) > 1:
            shown.pop()
        shown.append(count - 1)
    return shown


def line_chart(
    x_labels: Sequence[str], series: Sequence[LineSeries], *, label: str, plot_width: int = 330
) -> Markup:
    """Values in 0..1 over x positions (e.g. weights over rounds), one coloured line each,
    named in a legend under the plot (narrow enough for a phone at its drawn size)."""
    top, height = 16, 180
    bottom = top + height
    left = 40
    step = plot_width / max(1, len(x_labels) - 1)
    body: list[Markup] = []
    for tick in (0.0, 0.5, 1.0):
        y = bottom - tick * height
        body.append(
            tag(
                '<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#e3e3e3"/>'
                '<text x="{}" y="{:.1f}" text-anchor="end" dominant-baseline="middle" '
                'fill="#666">{:.1f}</text>',
                left,
                left + plot_width,
                y,
                y,
                left - 6,
                y,
                tick,
            )
        )
    for i in _labelled(len(x_labels), step):
        x_label = x_labels[i]
        body.append(
            tag(
                '<text x="{:.1f}" y="{}" text-anchor="middle" fill="#666">'
                "<title>{}</title>{}</text>",
                left + i * step,
                bottom + 16,
                x_label,
                truncate(x_label, 12),
            )
        )
    legend = bottom + 40
    for n, line in enumerate(series):
        colour = PALETTE[n % len(PALETTE)]
        points = " ".join(
            f"{left + i * step:.1f},{bottom - max(0.0, min(1.0, v)) * height:.1f}"
            for i, v in enumerate(line.values)
        )
        body.append(
            tag(
                '<g class="line"><title>{}</title><polyline points="{}" fill="none" '
                'stroke="{}" stroke-width="2"/></g>',
                f"{line.label}: " + ", ".join(f"{v:.3f}" for v in line.values),
                points,
                colour,
            )
        )
        body.append(
            tag(
                '<text class="line-label" x="{}" y="{}" fill="{}">— {}</text>',
                left,
                legend + 16 * n,
                colour,
                truncate(line.label, 40),
            )
        )
    return _svg(left + plot_width + 40, legend + 16 * len(series), body, label)
