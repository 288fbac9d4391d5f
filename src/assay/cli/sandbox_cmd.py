"""`assay sandbox check`: is the sandbox sound on this host? Non-zero exit when not."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from assay.cli import app
from assay.cli.output import console, emit_json, errors
from assay.validator.api import InfrastructureError, check_sandbox

sandbox_app = typer.Typer(help="The sealed sandbox agents run in.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")


@sandbox_app.command("check")
def check_command(
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Prove the sandbox is sound here (namespaces, seccomp, cgroups, tracer, network, copy-out)."""
    try:
        report = check_sandbox()
    except InfrastructureError as exc:
        errors.print(f"[bold red]sandbox unsound:[/] {exc}", highlight=False)
        raise typer.Exit(1) from exc
    failed = report.failed
    if as_json:
        emit_json(
            {
                "backend": report.backend,
                "sound": report.sound,
                "swept_stale": report.swept,
                "checks": [{"name": r.name, "ok": r.ok, "detail": r.detail} for r in report.checks],
            }
        )
    else:
        table = Table(title=f"sandbox check ({report.backend})")
        for column in ("check", "result", "detail"):
            table.add_column(column)
        for r in report.checks:
            table.add_row(r.name, "[green]ok[/]" if r.ok else "[bold red]FAIL[/]", r.detail)
        console.print(table)
    if failed:
        reasons = "; ".join(f"{r.name}: {r.detail}" for r in failed)
        errors.print(f"[bold red]sandbox unsound:[/] {reasons}", highlight=False)
        raise typer.Exit(1)
