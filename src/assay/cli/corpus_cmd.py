"""`assay corpus`: check a native corpus, import public datasets, add benign packages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from assay.cli import app
from assay.cli.output import console, errors
from assay.validator.api import (
    ImportFailed,
    ImportSummary,
    PhylaxImportError,
    Track,
    ValidationReport,
    add_benign,
    import_datadog,
    import_malregistry,
    import_osv,
    import_phylax,
    validate_corpus,
    write_split,
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
    tracks = ", ".join(t.value for t in Track)
    for folder in report.ignored:
        console.print(
            f"ignored {escape(str(folder))}/: not a track folder ({tracks})", soft_wrap=True
        )
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
    _imported(lambda: import_phylax(src, dest))
    report = validate_corpus(dest)
    _print_report(report)
    if not report.ok:
        raise typer.Exit(1)


def _imported(run: Callable[[], ImportSummary]) -> None:
    """Run one import and say what it wrote, or list why it wrote nothing (exit 1); an
    import that keeps going names what it left out (exit 1 too)."""
    try:
        summary = run()
    except (PhylaxImportError, ImportFailed) as exc:
        for problem in exc.problems:
            errors.print(
                f"[red]refused[/red] {escape(str(problem))}", highlight=False, soft_wrap=True
            )
        errors.print("[red]import failed; nothing was written[/red]")
        raise typer.Exit(1) from exc
    imported = ", ".join(f"{t.value}: {n}" for t, n in summary.tasks.items()) or "no tasks"
    console.print(f"imported into {escape(str(summary.dest))} ({imported})")
    for problem in summary.refused:
        errors.print(f"[red]refused[/red] {escape(str(problem))}", highlight=False, soft_wrap=True)
    if summary.refused:
        errors.print(f"[red]{len(summary.refused)} refused; the rest were written[/red]")
        raise typer.Exit(1)


_ONE_CLASS = (
    "the tasks are all of one class: add their counterparts (`assay corpus add-benign`), "
    "then check the whole with `assay corpus validate`"
)
Exclude = Annotated[
    list[str] | None, typer.Option("--exclude", help="package name to leave out (repeatable)")
]
Commit = Annotated[
    str, typer.Option("--commit", help="the dataset's commit, when SRC is not a git checkout")
]


@corpus_app.command("import-datadog")
def import_datadog_cmd(
    src: Annotated[Path, typer.Argument(help="malicious-software-packages-dataset checkout")],
    dest: Annotated[Path, typer.Argument(help="native corpus directory (created or added to)")],
    exclude: Exclude = None,
    commit: Commit = "",
) -> None:
    """Import the dataset's npm and PyPI samples as malicious package tasks, kept sealed."""
    _imported(lambda: import_datadog(src, dest, exclude=frozenset(exclude or ()), commit=commit))
    console.print(_ONE_CLASS)


@corpus_app.command("import-malregistry")
def import_malregistry_cmd(
    src: Annotated[Path, typer.Argument(help="registry root: <name>/<version>/<sdist>")],
    dest: Annotated[Path, typer.Argument(help="native corpus directory (created or added to)")],
    only: Annotated[
        list[str] | None, typer.Option("--only", help="package name to import (repeatable)")
    ] = None,
    exclude: Exclude = None,
    commit: Commit = "",
) -> None:
    """Import a PyPI malware registry's sdists as malicious package tasks, each sealed."""
    chosen = frozenset(only) if only else None
    left_out = frozenset(exclude or ())
    _imported(lambda: import_malregistry(src, dest, only=chosen, exclude=left_out, commit=commit))
    console.print(_ONE_CLASS)


@corpus_app.command("import-osv")
def import_osv_cmd(
    src: Annotated[Path, typer.Argument(help="folder of OSV MAL-*.json records")],
    dest: Annotated[Path, typer.Argument(help="native corpus directory (created or added to)")],
    artifacts: Annotated[
        Path, typer.Option("--artifacts", help="folder of the sdists and tarballs to label")
    ],
    commit: Commit = "",
    origin: Annotated[
        str, typer.Option("--origin", help="where the artifacts came from (recorded)")
    ] = "",
) -> None:
    """Label the supplied artifacts a MAL record names as malicious; each is stored sealed."""
    _imported(lambda: import_osv(src, artifacts, dest, commit=commit, origin=origin))
    console.print(_ONE_CLASS)


@corpus_app.command("add-benign")
def add_benign_cmd(
    dest: Annotated[Path, typer.Argument(help="native corpus directory (created or added to)")],
    pypi: Annotated[
        list[str] | None, typer.Option("--pypi", help="NAME==VERSION sdist (repeatable)")
    ] = None,
    npm: Annotated[
        list[str] | None, typer.Option("--npm", help="NAME@VERSION tarball (repeatable)")
    ] = None,
    find_links: Annotated[
        Path | None,
        typer.Option("--find-links", help="read sdists from this folder, not the index"),
    ] = None,
) -> None:
    """Fetch pinned popular packages with pip and npm as safe package tasks; a package
    refused costs only itself (named, exit 1), the rest are written."""
    if not pypi and not npm:
        errors.print("[red]name at least one --pypi or --npm package[/red]")
        raise typer.Exit(2)
    _imported(
        lambda: add_benign(
            dest, pypi=tuple(pypi or ()), npm=tuple(npm or ()), find_links=find_links
        )
    )


@corpus_app.command("split")
def split_cmd(
    src: Annotated[Path, typer.Argument(help="native corpus to split")],
    dest: Annotated[Path, typer.Argument(help="new directory: tuning/, set-aside/, split.json")],
    seed: Annotated[str, typer.Option("--seed", help="the split's seed (recorded)")],
    share: Annotated[float, typer.Option("--set-aside", min=0.1, max=0.9)] = 0.5,
) -> None:
    """Split a corpus into a tuning and a set-aside part, stratified and seeded."""
    split = write_split(src, dest, seed, share)  # a CorpusError is shown as a user error
    for part, names in split.parts.items():
        console.print(f"{part}: {len(names)} tasks")
        report = validate_corpus(dest / part)
        _print_report(report)
