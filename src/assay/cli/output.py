"""Shared terminal output: rich tables for people, plain JSON for programs."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay.results.scorecard import AgentTrackScore, Scorecard

console = Console()
errors = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    errors.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def emit_json(payload: Any) -> None:
    """One JSON object on stdout, keys sorted so equal results print identical bytes."""
    sys.stdout.write(json.dumps(payload, sort_keys=True, indent=2) + "\n")


def short(agent: str, names: Mapping[str, str] | None = None) -> str:
    """An agent as people read it: its name when known, and the hash prefix."""
    name = (names or {}).get(agent)
    return f"{name} {agent[:8]}" if name else agent[:12]


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _track_table(
    track: str, agents: dict[str, AgentTrackScore], names: Mapping[str, str] | None
) -> Table:
    behavioural = track != "repositories"
    threshold = next(iter(agents.values())).threshold if agents else 0.0
    metric = "clamped MCC × findings" if behavioural else "mean F2"
    table = Table(title=f"{track} — {metric}, threshold {threshold:.2f}", title_justify="left")
    columns = ["rank", "agent", "score"]
    columns += ["MCC", "clamped", "findings"] if behavioural else ["F2"]
    for column in [*columns, "failed", "eligible"]:
        table.add_column(column, justify="left" if column in ("agent", "eligible") else "right")
    ordered = sorted(agents.items(), key=lambda kv: (kv[1].rank is None, kv[1].rank or 0, kv[0]))
    for agent, s in ordered:
        metrics = [s.mcc, s.clamped_mcc, s.findings] if behavioural else [s.f2]
        table.add_row(
            str(s.rank) if s.rank else "—",
            escape(short(agent, names)),
            _num(s.score),
            *map(_num, metrics),
            str(s.failed_reps),
            "[green]yes[/]" if s.eligible else "[dim]no[/]",
        )
    return table


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
) -> None:
    """Per-track tables and the weights; `written` is a round's EMA-blended vector."""
    for track, agents in card.scores.items():
        console.print(_track_table(track, agents, names))
    if written is None:
        console.print(weights_table(card.weights, names))
        return
    console.print(weights_table(card.weights, names, "this round's weights"))
    console.print(weights_table(written, names, "weights written (EMA with the previous vector)"))
    console.print(f"[dim]mechanism {card.mechanism_version} sha256:{card.mechanism_digest}[/]")
