"""`assay round run|resume|report`, `assay eval` and `assay demo`."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from assay.attest.intake import admit_files
from assay.attest.keys import KeyFileError
from assay.attest.sssa import SssaError, export_round, verify_file
from assay.cli import app
from assay.cli.output import console, emit_json, errors, fail, print_scorecard, short
from assay.corpus.interface import CorpusError
from assay.detonate.observer import DetonationObserver
from assay.mechanism.spec import Track, pinned
from assay.report.json import JsonFormat
from assay.runner.outcome import RunOutcome
from assay.sandbox import default_backend
from assay.store.sqlite import Store, StoreError
from assay.validator.config import (
    ConfigError,
    RoundConfig,
    build_config,
    load_config,
    load_secret,
    parse_tracks,
)
from assay.validator.plan import PlanError, make_plan
from assay.validator.round import (
    Abstained,
    RoundEngine,
    RoundLedger,
    RoundResult,
    make_executor,
)

round_app = typer.Typer(help="Run, resume and report validator rounds.", no_args_is_help=True)
app.add_typer(round_app, name="round")

DbOption = Annotated[Path, typer.Option("--db", help="round store (SQLite file)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON object")]
HtmlOption = Annotated[Path | None, typer.Option("--html", help="write the HTML report here")]


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

    def __call__(self, outcome: RunOutcome) -> None:
        self.done += 1
        self.failed += not outcome.completed
        self.progress.update(self.bar, advance=1, failed=self.failed)
        step = max(1, self.total // 10)
        if not self.live and (self.done % step == 0 or self.done == self.total):
            errors.print(f"{self.label}: {self.done}/{self.total} reps, {self.failed} failed")

    @contextmanager
    def shown(self) -> Iterator[None]:
        with self.progress:
            yield


def _engine(
    store: Store,
    round_id: str,
    executor_name: str,
    jobs: int | None,
    secret: bytes,
    address: str | None = None,
) -> RoundEngine:
    executor = make_executor(executor_name, jobs, address)
    ledger = RoundLedger(store, round_id, pinned())
    # Behavioural tasks are detonated once each (DESIGN §8) before any rep runs.
    observer = DetonationObserver(default_backend())  # on this host, whatever the executor
    return RoundEngine(ledger, secret=secret, executor=executor, observer=observer)


def _drive(engine: RoundEngine) -> RoundResult:
    reporter = _Reporter(len(engine.ledger.pending()), engine.round_id)
    engine.on_outcome = reporter
    try:
        with reporter.shown():
            return engine.run()
    except KeyboardInterrupt:
        errors.print(
            f"interrupted: every finished rep is stored; continue with "
            f"`assay round resume {engine.round_id} --db {engine.store.path}`"
        )
        raise typer.Exit(130) from None


def _show(result: RoundResult, as_json: bool, html: Path | None) -> None:
    if html is not None:
        from assay.report.html import write_html

        write_html(result, html)
    if as_json:
        sys.stdout.write(JsonFormat().render(result))
        return
    if result.card is not None:
        print_scorecard(result.card, result.agents, result.weights, result.diagnostics.failed())
    status = "[green]completed[/]" if result.status == "completed" else f"[red]{result.status}[/]"
    # Reasons and names come from agents, artifacts and exceptions: never markup.
    console.print(f"round {result.round_id}: {status} {escape(result.reason or '')}")
    for agent, name in sorted(result.agents.items(), key=lambda kv: kv[1]):
        console.print(f"  {short(agent)}  {escape(name)}", highlight=False)
    for agent, refusals in sorted(result.plan.refused.items()):
        for track, why in sorted(refusals.items()):
            console.print(f"  refused {short(agent)} on {track}: {escape(why)}", highlight=False)
    if html is not None:
        console.print(f"HTML report: {html.resolve()}")


def _start(
    config: RoundConfig,
    *,
    reps: int | None = None,
    draw_all: bool = False,
    manifests: tuple[Path, ...] = (),
) -> RoundEngine:
    spec = pinned()
    secret, created = load_secret(config.secret_file)
    if created:
        errors.print(f"created a validator secret at {config.secret_file} (mode 0600)")
    admission = admit_files(config.agents, manifests, config.tracks, spec)
    for note in admission.notes:
        errors.print(note)
    agents = list(admission.agents)
    store = Store(config.db)
    round_id = store.next_round_id()
    plan = make_plan(
        corpus=config.corpus,
        agents=agents,
        tracks=config.tracks,
        round_seed=config.round_seed or secrets.token_hex(16),
        validator_id=config.validator_id,
        spec=spec,
        reps=reps,
        draw_all=draw_all,
    )
    plan = replace(plan, refused=admission.refused, manifests=admission.manifests)
    store.create_round(round_id, plan.to_json(), agents)
    return _engine(store, round_id, config.executor, config.jobs, secret, config.address)


@contextmanager
def _user_errors() -> Iterator[None]:
    try:
        yield
    except (
        ConfigError,
        PlanError,
        CorpusError,
        StoreError,
        Abstained,
        SssaError,
        KeyFileError,
    ) as exc:
        fail(str(exc))


@round_app.command("run")
def run_command(
    config_file: Annotated[Path | None, typer.Option("--config", help="round.toml")] = None,
    corpus: Annotated[Path | None, typer.Option("--corpus", help="native corpus folder")] = None,
    agent: Annotated[list[Path] | None, typer.Option("--agent", help="agent file (repeat)")] = None,
    manifest: Annotated[
        list[Path] | None,
        typer.Option("--manifest", help="signed agent manifest, `assay agent pin` (repeat)"),
    ] = None,
    seed: Annotated[str | None, typer.Option("--seed", help="round seed (hex)")] = None,
    tracks: Annotated[str | None, typer.Option("--tracks", help="comma-separated tracks")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="round store (SQLite file)")] = None,
    executor: Annotated[str | None, typer.Option("--executor", help="local or ray")] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", help="parallel reps (default: cores)")
    ] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="Ray cluster (ray executor; default: start one)")
    ] = None,
    validator_id: Annotated[str | None, typer.Option("--validator-id")] = None,
    secret_file: Annotated[Path | None, typer.Option("--secret-file")] = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
) -> None:
    """Plan, execute, score and weigh a round."""
    with _user_errors():
        flags = {
            "corpus": corpus,
            "agents": tuple(agent or ()),
            "round_seed": seed,
            "tracks": parse_tracks(tracks) if tracks else None,
            "db": db,
            "executor": executor,
            "jobs": jobs,
            "address": address,
            "validator_id": validator_id,
            "secret_file": secret_file,
        }
        file_values = load_config(config_file)
        config = build_config(file_values, flags)
        if manifest and not (agent or "agents" in file_values):
            config = replace(config, agents=())  # submissions only: no bundled agents
        result = _drive(_start(config, manifests=tuple(manifest or ())))
        _show(result, as_json, html)
    if result.status != "completed":
        raise typer.Exit(3)


@round_app.command("resume")
def resume_command(
    round_id: Annotated[str | None, typer.Argument(help="default: the latest unfinished")] = None,
    db: DbOption = Path("assay.db"),
    executor: Annotated[str, typer.Option("--executor")] = "local",
    jobs: Annotated[int | None, typer.Option("--jobs")] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="Ray cluster (ray executor; default: start one)")
    ] = None,
    secret_file: Annotated[Path | None, typer.Option("--secret-file")] = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
) -> None:
    """Finish an interrupted round: runs exactly the reps that have no stored outcome."""
    with _user_errors():
        store = Store(db)
        round_id = round_id or store.latest_unfinished()
        if round_id is None:
            fail(f"{db} has no unfinished round")
        stored = store.round(round_id)
        if stored.status == "completed":
            fail(f"round {round_id} is already completed")
        store.reopen(round_id)
        default = RoundConfig(corpus=Path(), agents=())
        secret, _ = load_secret(secret_file or default.secret_file)
        result = _drive(_engine(store, round_id, executor, jobs, secret, address))
        _show(result, as_json, html)
    if result.status != "completed":
        raise typer.Exit(3)


@round_app.command("report")
def report_command(
    round_id: Annotated[str, typer.Argument()],
    db: DbOption = Path("assay.db"),
    as_json: JsonOption = False,
    html: HtmlOption = None,
) -> None:
    """Show a stored round: rankings, matrices, failures, weights."""
    with _user_errors():
        _show(RoundLedger(Store(db), round_id, pinned()).result(), as_json, html)


@app.command("eval")
def eval_command(
    agent: Annotated[Path, typer.Argument(help="the agent file")],
    track: Annotated[Track, typer.Option("--track")],
    corpus: Annotated[Path | None, typer.Option("--corpus")] = None,
    reps: Annotated[int | None, typer.Option("--reps", min=1)] = None,
    jobs: Annotated[int | None, typer.Option("--jobs")] = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
) -> None:
    """Score one agent locally with the validator's exact metric, through the real sandbox."""
    import tempfile

    with _user_errors(), tempfile.TemporaryDirectory(prefix="assay-eval-") as tmp:
        flags: dict[str, Any] = {
            "corpus": corpus,
            "agents": (agent,),
            "tracks": (track,),
            "db": Path(tmp) / "eval.db",
            "jobs": jobs,
            "round_seed": "eval",
        }
        result = _drive(_start(build_config({}, flags), reps=reps, draw_all=True))
        if html is not None:
            from assay.report.html import write_html

            write_html(result, html)
        _show_eval(result, track, as_json)
    if result.status != "completed":
        raise typer.Exit(3)


def _show_eval(result: RoundResult, track: Track, as_json: bool) -> None:
    from assay.cli.eval_view import eval_json, print_eval

    if as_json:
        emit_json(eval_json(result, track))
    else:
        print_eval(result, track)


@app.command("demo")
def demo_command(
    db: Annotated[Path, typer.Option("--db")] = Path("out/demo.db"),
    html: Annotated[Path, typer.Option("--html")] = Path("out/demo-report.html"),
    jobs: Annotated[int | None, typer.Option("--jobs")] = None,
) -> None:
    """A full round of the bundled agents over the bundled corpus, with its report."""
    with _user_errors():
        config = build_config({}, {"db": db, "jobs": jobs, "round_seed": "demo"})
        result = _drive(_start(config, draw_all=True))
        _show(result, False, html)
        if result.status == "completed":
            _attest_demo(db, result.round_id)


def _attest_demo(db: Path, round_id: str) -> None:
    """Sign one SSSA per agent x task and verify each offline, as a consumer would."""
    out = db.parent / "sssa" / round_id
    export = export_round(db, round_id, out)
    written = export.written
    for path in written:
        verify_file(path)  # raises SssaError, naming the file and the field, on failure
    console.print(
        f"{len(written)} signed SSSAs in {out}, all verified (check one: assay attest verify FILE)"
    )
