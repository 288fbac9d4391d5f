"""Shared terminal output: rich tables for people, plain JSON for programs."""

from __future__ import annotations

import json
import sys
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


def short(agent: str) -> str:
    return agent[:12]


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _track_table(track: str, agents: dict[str, AgentTrackScore]) -> Table:
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
            short(agent),
            _num(s.score),
            *map(_num, metrics),
            str(s.failed_reps),
            "[green]yes[/]" if s.eligible else "[dim]no[/]",
        )
    return table


def weights_table(weights: dict[str, float]) -> Table:
    table = Table(title="weights", title_justify="left")
    table.add_column("agent")
    table.add_column("weight", justify="right")
    for agent, weight in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])):
        table.add_row(short(agent), f"{weight:.6f}")
    if not weights:
        table.add_row("—", "no agent is eligible on any track")
    return table


def print_scorecard(card: Scorecard) -> None:
    for track, agents in card.scores.items():
        console.print(_track_table(track, agents))
    console.print(weights_table(card.weights))
    console.print(f"[dim]mechanism {card.mechanism_version} sha256:{card.mechanism_digest}[/]")
