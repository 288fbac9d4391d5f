"""`assay eval` (an author scores one agent locally) and `assay demo`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from assay.cli import EXIT_BAR, app
from assay.cli.attest_cmd import announce_new_key
from assay.cli.eval_view import eval_json, print_eval
from assay.cli.options import (
    AgentsOption,
    CorpusOption,
    HtmlOption,
    JobsOption,
    JsonOption,
    TasksOption,
)
from assay.cli.output import (
    FormatOption,
    OutputFormat,
    OutputOption,
    chosen_format,
    console,
    emit_text,
    errors,
    exit_for,
    show_round,
    user_errors,
)
from assay.cli.progress import drive, notify
from assay.validator.api import RoundResult, Track, demo, evaluate, report_format


@app.command("eval")
def eval_command(
    agent: Annotated[Path, typer.Argument(help="the agent file", metavar="AGENT.py")],
    track: Annotated[Track, typer.Option("--track", help="the track to score the agent on")],
    corpus: CorpusOption = None,
    reps: Annotated[
        int | None,
        typer.Option("--reps", min=1, help="reps per task", show_default="the track's pinned reps"),
    ] = None,
    tasks: TasksOption = None,
    jobs: JobsOption = None,
    fail_under: Annotated[
        float | None,
        typer.Option(
            "--fail-under",
            min=0.0,
            max=1.0,
            help="exit 1 when the score is below this (instead of when not eligible)",
        ),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config", help="round.toml, e.g. for its [inference] model")
    ] = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="table: also each task's reps and findings beside the expected ones, "
            "with why each matched or not",
        ),
    ] = False,
) -> None:
    """Score one agent locally with the validator's exact metric, through the real sandbox.

    Exits 1 when the agent is not eligible on the track (or scores below
    --fail-under), or when every rep failed.
    """
    shown = chosen_format(fmt, as_json, output)
    with user_errors():
        result = evaluate(
            agent,
            track,
            corpus=corpus,
            reps=reps,
            tasks_cap=tasks,
            jobs=jobs,
            config_file=config_file,
            drive=drive,
            notify=notify,
        )
        if html is not None:
            report_format("html").write(result, html)
        _show_eval(result, track, shown, output, verbose)
    exit_for(result)
    missed = _missed_bar(result, track, fail_under)
    if missed is not None:
        errors.print(f"exit 1: {missed}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAR)


def _missed_bar(result: RoundResult, track: Track, fail_under: float | None) -> str | None:
    """Why the run fails the caller's bar (the exit status says it; this says why)."""
    if result.card is None:
        return None
    (score,) = result.card.scores[track.value].values()
    reps = [r for t in score.task_results for r in t.reps]
    if all(r.status != "completed" for r in reps):
        return "every rep failed"
    if fail_under is not None:
        if score.score < fail_under:
            return f"score {score.score:.3f} is below --fail-under {fail_under:g}"
        return None
    if not score.eligible:
        return f"not eligible: score {score.score:.3f}, threshold {score.threshold:.2f}"
    return None


def _show_eval(
    result: RoundResult, track: Track, fmt: OutputFormat, output: Path | None, verbose: bool
) -> None:
    if fmt is OutputFormat.JSON:
        emit_text(json.dumps(eval_json(result, track), sort_keys=True, indent=2) + "\n", output)
    elif fmt is OutputFormat.TABLE:
        print_eval(result, track, verbose)
    else:
        emit_text(report_format(fmt.value).render(result), output)


@app.command("demo")
def demo_command(
    db: Annotated[Path, typer.Option("--db", help="round store for the demo round")] = Path(
        "out/demo.db"
    ),
    html: Annotated[Path, typer.Option("--html", help="where the HTML report is written")] = Path(
        "out/demo-report.html"
    ),
    corpus: CorpusOption = None,
    agent: AgentsOption = None,
    jobs: JobsOption = None,
) -> None:
    """A full round of the bundled agents over the bundled corpus, with its report."""
    with user_errors():
        shown = demo(
            db, corpus=corpus, agents=tuple(agent or ()), jobs=jobs, drive=drive, notify=notify
        )
        show_round(shown.result, OutputFormat.TABLE, None, html)
    if shown.export is not None:
        announce_new_key(shown.export)
        console.print(
            f"{len(shown.export.written)} signed SSSAs in {shown.sssa_dir}, all verified "
            "(check one: assay attest verify FILE)"
        )
    exit_for(shown.result)
