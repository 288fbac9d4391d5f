"""`assay round run|resume|report`, `assay eval` and `assay demo`."""

from __future__ import annotations

import json
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
from rich.table import Table

from assay.attest.intake import admit_files
from assay.attest.keys import KeyFileError
from assay.attest.sssa import SssaError, export_round, verify_file
from assay.cli import EXIT_BAR, EXIT_INFRA, app
from assay.cli.attest_cmd import announce_new_key
from assay.cli.output import (
    FormatOption,
    OutputFormat,
    OutputOption,
    chosen_format,
    console,
    emit_json,
    emit_text,
    errors,
    fail,
    print_inference,
    print_scorecard,
    short,
)
from assay.corpus.interface import CorpusError
from assay.corpus.validate import require_valid
from assay.detonate.observer import DetonationObserver
from assay.inference.config import InferenceConfigError
from assay.mechanism.spec import Track, pinned
from assay.report.registry import report_format
from assay.report.text import printable
from assay.results.round import RoundResult
from assay.runner.outcome import RunOutcome
from assay.sandbox import default_backend
from assay.store.sqlite import Store, StoreError
from assay.validator.config import (
    EXAMPLE_ROUND_TOML,
    ConfigError,
    RoundConfig,
    build_config,
    check_jobs,
    default_db,
    default_secret_file,
    load_config,
    load_secret,
    parse_tracks,
)
from assay.validator.plan import PlanError, make_plan
from assay.validator.round import (
    Abstained,
    RoundEngine,
    RoundLedger,
    make_executor,
)
from assay.validator.snapshot import prune_snapshots, snapshot_root

round_app = typer.Typer(help="Run, resume and report validator rounds.", no_args_is_help=True)
app.add_typer(round_app, name="round")

# Fixed seeds: the same agent and corpus give the same eval and demo every time.
EVAL_SEED = "e7a1"
DEMO_SEED = "de70"

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db", help="round store (SQLite file)", show_default="rounds.db in the data directory"
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="print one JSON object (same as --format json)")
]
HtmlOption = Annotated[
    Path | None, typer.Option("--html", help="also write the HTML report to this file")
]
CorpusOption = Annotated[
    Path | None, typer.Option("--corpus", help="native corpus folder", show_default="bundled")
]
AgentsOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--agent", help="an agent file (repeat)", show_default="bundled agents", metavar="AGENT.py"
    ),
]
JobsOption = Annotated[
    int | None,
    typer.Option("--jobs", min=1, help="parallel reps", show_default="one per core"),
]
AddressOption = Annotated[
    str | None,
    typer.Option("--address", help="Ray cluster (ray executor)", show_default="start a local one"),
]
SecretOption = Annotated[
    Path | None,
    typer.Option(
        "--secret-file",
        help="the validator's secret (nonces derive from it)",
        show_default="validator.secret in the data directory",
    ),
]


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


def _show(
    result: RoundResult, fmt: OutputFormat, output: Path | None, html: Path | None = None
) -> None:
    """A round result in the chosen format; `--html FILE` writes the page besides."""
    if html is not None:
        report_format("html").write(result, html)
    if fmt is not OutputFormat.TABLE:
        emit_text(report_format(fmt.value).render(result), output)
        return
    if result.card is not None:
        print_scorecard(result.card, result.agents, result.weights, result.diagnostics.failed())
    print_inference(result.diagnostics.inference(), result.agents)
    status = "[green]completed[/]" if result.status == "completed" else f"[red]{result.status}[/]"
    # Reasons and names come from agents, artifacts and exceptions: never markup.
    console.print(f"round {result.round_id}: {status} {escape(result.reason or '')}")
    for agent, name in sorted(result.agents.items(), key=lambda kv: kv[1]):
        console.print(f"  {short(agent)}  {escape(name)}", highlight=False)
    for agent, refusals in sorted(result.plan.refused.items()):
        for track, why in sorted(refusals.items()):
            console.print(f"  refused {short(agent)} on {track}: {escape(why)}", highlight=False)
    for task, reasons in result.incomplete_detonations.items():
        shown = escape("; ".join(reasons))
        console.print(f"  detonation incomplete on {escape(task)}: {shown}", highlight=False)
    if html is not None:
        console.print(f"HTML report: {html.resolve()}")


def _exit_for(result: RoundResult) -> None:
    if result.status != "completed":
        raise typer.Exit(EXIT_INFRA)


def _start(
    config: RoundConfig,
    *,
    reps: int | None = None,
    draw_all: bool = False,
    manifests: tuple[Path, ...] = (),
) -> RoundEngine:
    spec = pinned()
    require_valid(config.corpus, config.tracks)
    if config.inference is not None:
        config.inference.resolve()  # an unset key variable stops here, before the round exists
    secret, created = load_secret(config.secret_file)
    if created:
        errors.print(
            f"created a validator secret at {config.secret_file} (mode 0600): every rep's "
            "nonce and probe derive from it, so keep it private, and keep it for `round "
            "resume`",
            markup=False,
            soft_wrap=True,
        )
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
        snapshots=snapshot_root(config.db, round_id),
        reps=reps,
        draw_all=draw_all,
    )
    plan = replace(plan, refused=admission.refused, manifests=admission.manifests)
    if config.inference is not None:
        models = {
            a.agent_hash: config.inference.model_for(
                admission.manifests.get(a.agent_hash, {}).get("model")
            )
            for a in agents
        }
        plan = replace(plan, inference=config.inference.model_dump(mode="json"), models=models)
    store.create_round(round_id, plan.to_json(), agents)
    # Completed rounds are never resumed: their artifact snapshots are not needed again.
    prune_snapshots(config.db, lambda other: _completed(store, other))
    return _engine(store, round_id, config.executor, config.jobs, secret, config.address)


def _completed(store: Store, round_id: str) -> bool:
    try:
        return store.round(round_id).status == "completed"
    except StoreError:
        return False  # not a round of this store: not ours to remove


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
        InferenceConfigError,
    ) as exc:
        fail(str(exc))


@round_app.command("run")
def run_command(
    config_file: Annotated[
        Path | None,
        typer.Option("--config", help="round.toml (`assay round config --example` shows one)"),
    ] = None,
    corpus: CorpusOption = None,
    agent: AgentsOption = None,
    manifest: Annotated[
        list[Path] | None,
        typer.Option(
            "--manifest",
            help="signed agent manifest, `assay agent pin` (repeat)",
            metavar="MANIFEST",
        ),
    ] = None,
    seed: Annotated[
        str | None,
        typer.Option("--seed", help="round seed (hex)", show_default="random", metavar="HEX"),
    ] = None,
    tracks: Annotated[
        str | None, typer.Option("--tracks", help="comma-separated tracks", show_default="all")
    ] = None,
    db: DbOption = None,
    executor: Annotated[
        str | None, typer.Option("--executor", help="local or ray", show_default="local")
    ] = None,
    jobs: JobsOption = None,
    address: AddressOption = None,
    validator_id: Annotated[
        str | None,
        typer.Option(
            "--validator-id", help="names this validator in results", show_default="local"
        ),
    ] = None,
    secret_file: SecretOption = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
) -> None:
    """Plan, execute, score and weigh a round."""
    shown = chosen_format(fmt, as_json, output)
    with _user_errors():
        flags = {
            "corpus": corpus,
            "agents": tuple(agent or ()),
            "round_seed": seed,
            "tracks": parse_tracks(tracks) if tracks is not None else None,
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
        _show(result, shown, output, html)
    _exit_for(result)


@round_app.command("resume")
def resume_command(
    round_id: Annotated[
        str | None, typer.Argument(help="the round", show_default="the latest unfinished")
    ] = None,
    db: DbOption = None,
    executor: Annotated[str, typer.Option("--executor", help="local or ray")] = "local",
    jobs: JobsOption = None,
    address: AddressOption = None,
    secret_file: SecretOption = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
) -> None:
    """Finish an interrupted round: runs exactly the reps that have no stored outcome."""
    shown = chosen_format(fmt, as_json, output)
    with _user_errors():
        check_jobs(jobs)
        store = Store(db or default_db(), create=False)
        round_id = round_id or store.latest_unfinished()
        if round_id is None:
            fail(f"{store.path} has no unfinished round")
        stored = store.round(round_id)
        if stored.status == "completed":
            fail(f"round {round_id} is already completed")
        store.reopen(round_id)
        secret, _ = load_secret(secret_file or default_secret_file())
        result = _drive(_engine(store, round_id, executor, jobs, secret, address))
        _show(result, shown, output, html)
    _exit_for(result)


@round_app.command("report")
def report_command(
    round_id: Annotated[str, typer.Argument(help="the round, e.g. round-0001")],
    db: DbOption = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
) -> None:
    """Show a stored round: rankings, matrices, failures, weights."""
    with _user_errors():
        store = Store(db or default_db(), create=False)
        result = RoundLedger(store, round_id, pinned()).result()
        _show(
            replace(result, weight_history=store.weight_history()),
            chosen_format(fmt, as_json, output),
            output,
            html,
        )


@round_app.command("list")
def list_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Every round in the store, oldest first, with its status."""
    with _user_errors():
        summaries = Store(db or default_db(), create=False).summaries()
    if as_json:
        emit_json([vars(s) for s in summaries])
        return
    table = Table(title=f"rounds in {db or default_db()}", title_justify="left")
    for column in ("round", "status", "tracks", "agents", "reps", "seed", "reason"):
        table.add_column(column, overflow="fold")
    for s in summaries:
        table.add_row(
            s.round_id,
            s.status,
            ", ".join(s.tracks),
            str(s.agents),
            str(s.reps_stored),
            s.round_seed[:16],
            escape(printable(s.reason or "", 120)),
        )
    console.print(table)
    if not summaries:
        console.print("no rounds yet: `assay round run` starts one")


@round_app.command("config")
def config_command(
    example: Annotated[
        bool, typer.Option("--example", help="print a commented round.toml")
    ] = False,
) -> None:
    """Explain round.toml; with --example, print a commented example to start from."""
    if not example:
        console.print(
            "round.toml holds `assay round run`'s options under [round]; flags override it."
        )
        console.print("`assay round config --example > round.toml` writes a commented example.")
        return
    sys.stdout.write(EXAMPLE_ROUND_TOML)


@app.command("eval")
def eval_command(
    agent: Annotated[Path, typer.Argument(help="the agent file", metavar="AGENT.py")],
    track: Annotated[Track, typer.Option("--track", help="the track to score the agent on")],
    corpus: CorpusOption = None,
    reps: Annotated[
        int | None,
        typer.Option("--reps", min=1, help="reps per task", show_default="the track's pinned reps"),
    ] = None,
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
) -> None:
    """Score one agent locally with the validator's exact metric, through the real sandbox.

    Exits 1 when the agent is not eligible on the track (or scores below
    --fail-under), or when every rep failed.
    """
    import tempfile

    shown = chosen_format(fmt, as_json, output)
    with _user_errors(), tempfile.TemporaryDirectory(prefix="assay-eval-") as tmp:
        flags: dict[str, Any] = {
            "corpus": corpus,
            "agents": (agent,),
            "tracks": (track,),
            "db": Path(tmp) / "eval.db",
            "jobs": jobs,
            "round_seed": EVAL_SEED,
        }
        config = build_config(load_config(config_file), flags)
        result = _drive(_start(config, reps=reps, draw_all=True))
        result = replace(result, kind="eval")
        if html is not None:
            report_format("html").write(result, html)
        _show_eval(result, track, shown, output)
    _exit_for(result)
    if _below_bar(result, track, fail_under):
        raise typer.Exit(EXIT_BAR)


def _below_bar(result: RoundResult, track: Track, fail_under: float | None) -> bool:
    if result.card is None:
        return False
    (score,) = result.card.scores[track.value].values()
    reps = [r for t in score.task_results for r in t.reps]
    if all(r.status != "completed" for r in reps):
        return True
    return score.score < fail_under if fail_under is not None else not score.eligible


def _show_eval(result: RoundResult, track: Track, fmt: OutputFormat, output: Path | None) -> None:
    from assay.cli.eval_view import eval_json, print_eval

    if fmt is OutputFormat.JSON:
        emit_text(json.dumps(eval_json(result, track), sort_keys=True, indent=2) + "\n", output)
    elif fmt is OutputFormat.TABLE:
        print_eval(result, track)
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
    with _user_errors():
        flags = {"db": db, "jobs": jobs, "round_seed": DEMO_SEED, "corpus": corpus}
        config = build_config({}, {**flags, "agents": tuple(agent or ())})
        result = _drive(_start(config, draw_all=True))
        _show(result, OutputFormat.TABLE, None, html)
        if result.status == "completed":
            _attest_demo(db, result.round_id)
    _exit_for(result)


def _attest_demo(db: Path, round_id: str) -> None:
    """Sign one SSSA per agent x task and verify each offline, as a consumer would."""
    out = db.parent / "sssa" / round_id
    export = export_round(db, round_id, out)
    announce_new_key(export)
    written = export.written
    for path in written:
        verify_file(path)  # raises SssaError, naming the file and the field, on failure
    console.print(
        f"{len(written)} signed SSSAs in {out}, all verified (check one: assay attest verify FILE)"
    )
