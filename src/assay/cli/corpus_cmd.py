"""`assay corpus`: check a native corpus and import a Phylax one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from assay.cli import app
from assay.cli.output import console, errors
from assay.validator.api import (
    PhylaxImportError,
    ValidationReport,
    import_phylax,
    validate_corpus,
)

corpus_app = typer.Typer(help="Author and check labelled corpora.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")


def _print_report(report: ValidationReport) -> None:
    table = Table(title=f"corpus {escape(str(report.root))}")
    for column in ("track", "tasks", "malicious", "safe"):
        table.add_column(column)
    for track, counts in report.counts.items():
        table.add_row(track.value, str(counts.total), str(counts.malicious), str(counts.safe))
    console.print(table)
    for problem in report.problems:
        errors.print(f"[red]problem[/red] {escape(str(problem))}", highlight=False, soft_wrap=True)
    if report.ok:
        console.print("[green]corpus is valid[/green]")
    else:
        errors.print(f"[red]{len(report.problems)} problem(s) found[/red]")


@corpus_app.command("validate")
def validate(
    directory: Annotated[Path, typer.Argument(help="Native corpus root")],
) -> None:
    """List every problem of a native corpus; exits 1 when there is any."""
    report = validate_corpus(directory)
    _print_report(report)
    if not report.ok:
        raise typer.Exit(1)


@corpus_app.command("import-phylax")
def import_phylax_cmd(
    src: Annotated[Path, typer.Argument(help="Phylax corpus-data root")],
    dest: Annotated[Path, typer.Argument(help="New (or empty) native corpus directory")],
) -> None:
    """Convert a Phylax corpus into the native layout, then validate the result."""
    try:
        summary = import_phylax(src, dest)
    except PhylaxImportError as exc:
        for problem in exc.problems:
            errors.print(
                f"[red]refused[/red] {escape(str(problem))}", highlight=False, soft_wrap=True
            )
        errors.print("[red]import failed; nothing was written[/red]")
        raise typer.Exit(1) from exc
    imported = ", ".join(f"{t.value}: {n}" for t, n in summary.tasks.items())
    console.print(f"imported into {escape(str(summary.dest))} ({imported})")
    report = validate_corpus(dest)
    _print_report(report)
    if not report.ok:
        raise typer.Exit(1)
