"""Shared terminal output: rich tables for people, plain JSON for programs."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TextIO

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from assay.cli import EXIT_INFRA
from assay.records.agent import short_hash
from assay.records.chain import YumaPreview
from assay.records.diagnostics import RepDiagnostic
from assay.records.scorecard import AgentTrackScore, Scorecard, pay_rule, score_formula
from assay.validator.api import (
    USER_ERRORS,
    RoundResult,
    pinned,
    report_format,
    visible,
    write_document,
    write_html,
)


class SafeConsole(Console):
    """A console that shows every control character it is given as a visible escape.

    Text reaches the terminal through `_render_buffer` as segments; rich's own cursor
    and style codes are not text segments, so only what was printed is changed. The
    characters Python splits lines at (`\u2028`, `\x85`, ...) are escaped earlier, as
    a string is turned into text: rich would lay them out as line breaks first.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(_LINE_BREAKS.sub(lambda m: visible(m[0]), text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(_shown(segment) for segment in buffer)


# What `str.splitlines` breaks at besides a newline.
_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _shown(segment: Segment) -> Segment:
    if segment.control is not None:
        return segment
    return Segment(visible(segment.text), segment.style)


def _piped_width(stream: TextIO) -> int | None:
    """Output into a pipe or a file is read whole, not on an 80-column screen: tables
    there are laid out wide enough that hashes and names are not cut (`COLUMNS` wins)."""
    return None if stream.isatty() or "COLUMNS" in os.environ else 160


console = SafeConsole(width=_piped_width(sys.stdout))
errors = SafeConsole(stderr=True, width=_piped_width(sys.stderr))


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    SARIF = "sarif"
    JUNIT = "junit"
    HTML = "html"


FORMAT_HELP = (
    "table (the terminal), json, markdown (a pull-request comment), sarif (code scanning), "
    "junit (per-task results for CI) or html (one self-contained page)"
)
FormatOption = Annotated[
    OutputFormat | None,
    typer.Option("--format", help=f"Output format: {FORMAT_HELP}.", show_default="table"),
]
OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Write the report to this file instead of standard output.",
        dir_okay=False,
        show_default="standard output",
    ),
]


def chosen_format(fmt: OutputFormat | None, as_json: bool, output: Path | None) -> OutputFormat:
    """`--format` wins; the older `--json` flag means json; otherwise the terminal table.

    Checked before any work starts: a table is for the terminal, not for `--output`.
    """
    chosen = fmt if fmt is not None else (OutputFormat.JSON if as_json else OutputFormat.TABLE)
    if chosen is OutputFormat.TABLE and output is not None:
        fail(f"--output writes a report file: choose a --format other than table ({FORMAT_HELP})")
    return chosen


def emit_text(text: str, output: Path | None) -> None:
    """A rendered report to a file (see `write_document`) or stdout."""
    if output is None:
        sys.stdout.write(text)
        return
    write_document(output, text)
    errors.print(f"wrote {output}", markup=False, highlight=False)


def fail(message: str, code: int = 2) -> NoReturn:
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def emit_json(payload: Any) -> None:
    """One JSON object on stdout, keys sorted so equal results print identical bytes."""
    sys.stdout.write(json.dumps(payload, sort_keys=True, indent=2) + "\n")


def short(agent: str, names: Mapping[str, str] | None = None) -> str:
    """An agent as people read it: its name when known, and the hash prefix."""
    name = (names or {}).get(agent)
    return f"{name} {short_hash(agent)}" if name else short_hash(agent)


@contextmanager
def user_errors() -> Iterator[None]:
    """A mistake in the user's input ends the command with its message and exit 2, like
    a usage error; the validator's own faults are not caught here."""
    try:
        yield
    except USER_ERRORS as exc:
        fail(str(exc))


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


NAME_SHOWN = 24  # characters of an agent's name in a table; --json has it whole


def _agent_cell(agent: str, names: Mapping[str, str] | None) -> str:
    name = (names or {}).get(agent, "")
    cut = name if len(name) <= NAME_SHOWN else name[: NAME_SHOWN - 1] + "…"
    return f"{short_hash(agent)} {cut}".rstrip()


def _track_table(
    track: str, agents: dict[str, AgentTrackScore], names: Mapping[str, str] | None
) -> Table:
    behavioural = track != "repositories"
    threshold = next(iter(agents.values())).threshold if agents else 0.0
    metric = score_formula(behavioural, pinned().findings_weight)
    table = Table(
        title=f"{track} — {metric}, threshold {threshold:.2f}",
        title_justify="left",
        # No vertical rules and one space between columns: nine columns fit 80.
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    columns = ["rank", "agent", "score", "interval"]
    # The clamped MCC is max(0, MCC): the HTML and --json show it, the terminal has no room.
    columns += ["MCC", "findings"] if behavioural else ["F2"]
    for column in [*columns, "failed", "eligible"]:
        if column == "agent":
            # Folded, never cut: the hash first, whole, so it can be searched for.
            table.add_column(column, overflow="fold", min_width=12)
        else:
            left = column == "eligible"
            table.add_column(column, justify="left" if left else "right", no_wrap=True)
    ordered = sorted(agents.items(), key=lambda kv: (kv[1].rank is None, kv[1].rank or 0, kv[0]))
    for agent, s in ordered:
        metrics = [s.mcc, s.findings] if behavioural else [s.f2]
        table.add_row(
            str(s.rank) if s.rank else "—",
            escape(_agent_cell(agent, names)),
            _num(s.score),
            f"{s.interval.low:.2f}–{s.interval.high:.2f}" if s.interval else "—",
            *map(_num, metrics),
            str(s.failed_reps),
            "[green]yes[/]" if s.eligible else "[dim]no[/]",
        )
    return table


FAILURES_SHOWN = 5  # per agent and track on a terminal; `--json` and HTML list every one


def print_failures(
    failed: Sequence[RepDiagnostic],
    title: str,
    names: Mapping[str, str] | None = None,
    limit: int | None = None,
) -> None:
    """Failed reps with what they mean, so a reason code is never all a user sees.

    Lines rather than a table: details are long, and a narrow terminal would
    fold a table's columns into fragments nobody can search for.
    """
    if not failed:
        return
    console.print(f"[bold]{escape(title)}[/]")
    shown: dict[str, int] = {}
    for d in failed:
        shown[d.agent] = shown.get(d.agent, 0) + 1
        if limit is not None and shown[d.agent] > limit:
            continue
        who = f"{escape(short(d.agent, names))}  " if names is not None else ""
        console.print(
            f"  {who}{escape(d.task)} rep {d.rep}: [red]{escape(d.reason or 'failed')}[/]"
            f" (CPU {d.cpu_text})",
            highlight=False,
        )
        if d.detail:
            console.print(f"    {escape(d.detail)}", highlight=False, soft_wrap=True)
    for agent, count in shown.items():
        if limit is not None and count > limit:
            console.print(f"  {escape(short(agent, names))}  … {count - limit} more (see --json)")


def print_inference(result: RoundResult, names: Mapping[str, str] | None = None) -> None:
    """What agents spent through the inference proxy (diagnostic, like CPU seconds), and
    what it cost when the round has a price table."""
    totals = result.diagnostics.inference()
    if not totals:
        return
    priced = result.plan.inference is not None and result.plan.inference.price is not None
    table = Table(title="inference (per agent and track, summed over reps)", title_justify="left")
    columns = ("track", "agent", "requests", "429", "errors", "tokens in+out", "upstream s")
    for column in columns + (("cost",) if priced else ()):
        table.add_column(column, justify="left" if column in ("track", "agent") else "right")
    for t in totals:
        counted = "*" if t.estimated else ""
        cost = result.cost_text(t)
        table.add_row(
            t.track.value,
            escape(short(t.agent, names)),
            str(t.requests),
            str(t.refused),
            str(t.errors),
            f"{t.prompt_tokens}+{t.completion_tokens}{counted}",
            f"{t.upstream_s:.2f}",
            *([escape(cost)] if cost is not None else []),
        )
    console.print(table)
    if any(t.estimated for t in totals):
        console.print("[dim]* includes tokens counted as bytes / 4 (the upstream gave no usage)[/]")


def weights_table(
    weights: dict[str, float], names: Mapping[str, str] | None = None, title: str = "weights"
) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("agent")
    table.add_column("weight", justify="right")
    for agent, weight in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(escape(short(agent, names)), f"{weight:.6f}")
    if not weights:
        table.add_row("—", "no agent is eligible on any track")
    return table


def print_scorecard(
    card: Scorecard,
    names: Mapping[str, str] | None = None,
    written: dict[str, float] | None = None,
    failed: Sequence[RepDiagnostic] = (),
    refused: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Per-track tables and the weights; `written` is a round's EMA-blended vector.
    Agents `refused` (hash -> track -> why) are listed under their track, not ranked."""
    for track, agents in card.scores.items():
        out = {a: why[track] for a, why in (refused or {}).items() if track in why}
        ranked = {a: s for a, s in agents.items() if a not in out}
        console.print(_track_table(track, ranked, names))
        held = card.stability.get(track)
        if held is not None:
            console.print(f"  how sure: {held.text}", highlight=False)
        console.print(f"  pay: {pay_rule(pinned().top_split, ranked)}", highlight=False)
        for agent, why in sorted(out.items()):
            console.print(
                f"  [bold]refused[/] {escape(short(agent, names))}: {escape(why)} (not ranked)",
                highlight=False,
                soft_wrap=True,  # one line, whole: the reason is searched for
            )
        on_track = [d for d in failed if d.track == track]
        print_failures(on_track, f"{track} — failed reps", names or {}, FAILURES_SHOWN)
    if written is None:
        console.print(weights_table(card.weights, names))
        return
    console.print(weights_table(card.weights, names, "this round's weights"))
    console.print(weights_table(written, names, "weights written (EMA with the previous vector)"))
    console.print(f"[dim]mechanism {card.mechanism_version} sha256:{card.mechanism_digest}[/]")


def show_round(
    result: RoundResult,
    fmt: OutputFormat,
    output: Path | None,
    html: Path | None = None,
    yuma: YumaPreview | None = None,
) -> None:
    """A round result in the chosen format; `--html FILE` writes the page besides (with
    the subnet's consensus on the round's weights when `yuma` is given)."""
    if html is not None:
        write_html(result, html, yuma)
    if fmt is not OutputFormat.TABLE:
        emit_text(report_format(fmt.value).render(result), output)
        return
    if result.card is not None:
        print_scorecard(
            result.card,
            result.agents,
            result.weights,
            result.failed_reps(),
            result.refusals,
        )
    print_inference(result, result.agents)
    status = "[green]completed[/]" if result.status == "completed" else f"[red]{result.status}[/]"
    # Reasons and names come from agents, artifacts and exceptions: never markup.
    console.print(f"round {result.round_id}: {status} {escape(result.reason or '')}")
    for track, why in result.abstained_tracks.items():
        console.print(
            f"  [red]abstained on {escape(track)}[/]: {escape(why)} "
            "(not scored; `assay round resume` runs it again)",
            highlight=False,
        )
    for agent, name in sorted(result.agents.items(), key=lambda kv: kv[1]):
        console.print(f"  {short(agent)}  {escape(name)}", highlight=False)
    if result.card is None:  # with scores, each track's table lists its refused agents
        for agent, refusals in sorted(result.plan.refused.items()):
            for track, why in sorted(refusals.items()):
                console.print(
                    f"  refused {short(agent)} on {track}: {escape(why)}", highlight=False
                )
    for task, reasons in result.incomplete_detonations.items():
        shown = escape("; ".join(reasons))
        console.print(f"  detonation incomplete on {escape(task)}: {shown}", highlight=False)
    if html is not None:
        console.print(f"HTML report: {html.resolve()}")


def exit_for(result: RoundResult) -> None:
    """A round that did not complete (the validator abstained) exits as an infrastructure
    fault. One that completed without a track it abstained on exits 0 (its weights stand,
    that track's share split as an idle track's), saying so on stderr."""
    if result.abstained_tracks and result.status == "completed":
        errors.print(
            f"round {result.round_id} completed without "
            f"{', '.join(result.abstained_tracks)} (an infrastructure fault; "
            "`assay round resume` runs it again)",
            markup=False,
        )
    if result.status != "completed":
        raise typer.Exit(EXIT_INFRA)
