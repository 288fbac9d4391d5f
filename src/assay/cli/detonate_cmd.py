"""`assay detonate DIR --track T`: what the artifact does in the sandbox, by capability."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from assay.cli import EXIT_INFRA, app
from assay.cli.output import OutputOption, console, emit_text, errors, fail
from assay.records.codec import to_builtins
from assay.validator.api import (
    DEFAULT_OBSERVER,
    Detonation,
    EvidenceRecord,
    InfrastructureError,
    ObserverKind,
    Track,
    detonate_artifact,
)
from assay.validator.api import markdown as md

_STYLE = {"normal": "green", "dangerous": "yellow", "system": "bold magenta", "redact": "bold red"}


_WEAKER = (
    "observer: strace, the weaker one (every traced call stops the process, which a "
    "payload can time; --observer ebpf watches from the kernel)"
)


class DetonateFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


@app.command("detonate")
def detonate_command(
    directory: Annotated[Path, typer.Argument(help="the unpacked artifact")],
    track: Annotated[str, typer.Option("--track", help="skills, mcp_servers or packages")],
    as_json: Annotated[
        bool, typer.Option("--json", help="print one JSON object (same as --format json)")
    ] = False,
    fmt: Annotated[
        DetonateFormat | None,
        typer.Option("--format", help="table, json or markdown", show_default="table"),
    ] = None,
    output: OutputOption = None,
    observer: Annotated[
        ObserverKind,
        typer.Option(
            "--observer",
            help="strace (the default; the weaker one: a payload can time its stops) or ebpf "
            "(from the kernel; nothing stops a traced process)",
        ),
    ] = DEFAULT_OBSERVER,
) -> None:
    """Detonate an artifact under the validator's observer and map what it did to capabilities."""
    shown = fmt or (DetonateFormat.JSON if as_json else DetonateFormat.TABLE)
    if shown is DetonateFormat.TABLE and output is not None:
        fail("--output writes a file: choose --format json or markdown")
    try:
        chosen = Track(track)
    except ValueError:
        fail(f"unknown track {track!r}")
    if not chosen.behavioural:
        fail(f"the {chosen.value} track is audited statically, not detonated")
    if not directory.is_dir():
        fail(f"{directory} is not a directory")
    try:
        result = detonate_artifact(directory, chosen, observer)
    except InfrastructureError as exc:
        fail(f"sandbox unavailable: {exc}", code=EXIT_INFRA)
    if observer is ObserverKind.STRACE:
        errors.print(_WEAKER, highlight=False)
    if shown is DetonateFormat.JSON:
        emit_text(json.dumps(result.to_json(), sort_keys=True, indent=2) + "\n", output)
    elif shown is DetonateFormat.MARKDOWN:
        emit_text(_markdown(result, directory), output)
    else:
        _print(result, directory)


def _markdown(result: Detonation, directory: Path) -> str:
    """The observed capabilities as a Markdown table, every artifact string escaped."""
    lines = [
        f"## assay detonation of {md(str(directory))} ({result.track.value})",
        "",
        "| capability | protection | profiles | evidence |",
        "|---|---|---|---|",
    ]
    for observed in result.capabilities:
        evidence = observed.record().evidence[:3]
        shown = "; ".join(md(_evidence_line(e), 160) for e in evidence)
        lines.append(
            f"| {observed.capability} | {observed.protection} | "
            f"{', '.join(observed.profiles)} | {shown} |"
        )
    if not result.capabilities:
        lines.append("| — | | | no capability observed |")
    if not result.complete:
        lines += ["", "**Incomplete**: the detonation could not see everything:", ""]
        lines += [f"- {md(reason, 300)}" for reason in result.interference]
    return "\n".join(lines) + "\n"


def _print(result: Detonation, directory: Path) -> None:
    table = Table(title=f"detonation of {escape(str(directory))} ({result.track.value})")
    for column in ("capability", "protection", "profiles", "evidence"):
        table.add_column(column, overflow="fold")
    for observed in result.capabilities:
        style = _STYLE.get(observed.protection, "")
        evidence = observed.record().evidence
        lines = [_evidence_line(e) for e in evidence[:3]]
        if len(evidence) > 3:
            lines.append(f"… {len(evidence) - 3} more")
        table.add_row(
            f"[{style}]{observed.capability}[/]",
            observed.protection,
            ", ".join(observed.profiles),
            escape("\n".join(lines)),
        )
    console.print(table)
    if not result.capabilities:
        if result.complete:
            console.print("[green]no capability observed[/]")
        else:
            console.print("[bold yellow]no capability observed, in a disturbed detonation[/]")
    for name, profiles in sorted(result.gated().items()):
        console.print(f"[bold]gated:[/] {name} only under {', '.join(profiles)}")
    if result.mcp is not None:
        _print_mcp(to_builtins(result.mcp))
    runs = ", ".join(f"{p.name} {p.status} ({p.wall_s:.1f}s)" for p in result.profiles)
    console.print(f"profiles: {runs or 'none run'}", highlight=False)
    for note in result.notes:
        console.print(f"note: {escape(note)}", highlight=False)
    if not result.complete:
        console.print(
            "[bold yellow]incomplete:[/] the detonation could not see everything "
            "(interference is evidence, not a clean result):"
        )
        for reason in result.interference:
            console.print(f"  - {escape(reason)}", highlight=False)


def _print_mcp(mcp: dict[str, object]) -> None:
    tools = mcp.get("tools") or []
    calls = mcp.get("calls") or {}
    assert isinstance(tools, list) and isinstance(calls, dict)
    names = ", ".join(str(t.get("name")) for t in tools if isinstance(t, dict))
    console.print(f"MCP tools listed: {escape(names) or 'none'}", highlight=False)
    for profile, made in sorted(calls.items()):
        outcomes = ", ".join(f"{c.get('tool')} {c.get('outcome')}" for c in made)
        console.print(f"  calls under {profile}: {escape(outcomes) or 'none'}", highlight=False)
    changed = mcp.get("tools_after_change")
    if isinstance(changed, list) and changed:
        after = ", ".join(str(t.get("name")) for t in changed if isinstance(t, dict))
        console.print(f"[bold]tools changed mid-session:[/] {escape(after)}", highlight=False)


def _evidence_line(evidence: EvidenceRecord) -> str:
    what = evidence.path or evidence.peer or " ".join(evidence.argv)
    detail = f" — {evidence.detail}" if evidence.detail else ""
    return f"{evidence.event}: {what}{detail}"
