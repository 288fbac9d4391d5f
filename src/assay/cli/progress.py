"""Driving a round from the terminal: a progress bar, and what Ctrl-C leaves behind."""

from __future__ import annotations

import sys

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from assay.cli.output import errors
from assay.records.outcome import RunOutcome
from assay.validator.api import Round, RoundResult


class _Reporter:
    """Progress on a terminal (rich), a quiet line per 10 % elsewhere."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.label = label
        self.live = sys.stderr.isatty()
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TimeRemainingColumn(),
            console=errors,
            disable=not self.live,
        )
        self.bar = self.progress.add_task(label, total=total, failed=0)

    def detonating(self, done: int, total: int) -> None:
        """Artifacts are detonated before any rep: say so, rather than sit at 0/N."""
        if not total:
            return
        what = f"{self.label} · detonating {done + 1}/{total}" if done < total else self.label
        self.progress.update(self.bar, description=what)
        if not self.live and done < total:
            errors.print(f"{self.label}: detonating {done + 1}/{total}", highlight=False)

    def __call__(self, outcome: RunOutcome) -> None:
        self.done += 1
        self.failed += not outcome.completed
        self.progress.update(self.bar, advance=1, failed=self.failed)
        step = max(1, self.total // 10)
        if not self.live and (self.done % step == 0 or self.done == self.total):
            errors.print(f"{self.label}: {self.done}/{self.total} reps, {self.failed} failed")


def drive(round_: Round) -> RoundResult:
    """Run the round with progress shown; on Ctrl-C, say how to finish it and exit 130."""
    reporter = _Reporter(round_.pending(), round_.round_id)
    try:
        with reporter.progress:
            return round_.run(reporter, reporter.detonating)
    except KeyboardInterrupt:
        errors.print(
            f"interrupted: every finished rep is stored; continue with "
            f"`assay round resume {round_.round_id} --db {round_.store_path}`"
        )
        raise typer.Exit(130) from None


def notify(message: str) -> None:
    """What the validator wants the operator to know, on stderr, verbatim."""
    errors.print(message, markup=False, soft_wrap=True)
