"""`assay round run|resume|report|list|config`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from assay.cli import EXIT_INFRA, app
from assay.cli.chain_cmd import ConfigOption as ChainConfigOption
from assay.cli.chain_cmd import SnapshotOption
from assay.cli.options import (
    AddressOption,
    AgentsOption,
    CorpusOption,
    DbOption,
    HtmlOption,
    JobsOption,
    JsonOption,
    SecretOption,
    TasksOption,
)
from assay.cli.output import (
    FormatOption,
    OutputOption,
    chosen_format,
    console,
    emit_json,
    exit_for,
    fail,
    show_round,
    user_errors,
)
from assay.cli.progress import drive, notify
from assay.validator.api import (
    EXAMPLE_ROUND_TOML,
    ChainConfig,
    ChainError,
    ExecutionChoice,
    Round,
    RoundOverrides,
    RoundSummary,
    chain_config,
    default_db,
    list_rounds,
    parse_tracks,
    printable,
    round_config,
    round_preview,
    save_snapshot,
    stored_result,
)

round_app = typer.Typer(help="Run, resume and report validator rounds.", no_args_is_help=True)
app.add_typer(round_app, name="round")


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
    snapshot: Annotated[
        Path | None,
        typer.Option(
            "--snapshot",
            help="a subnet's metagraph snapshot (chain mode): manifests of hotkeys it does not "
            "register are refused, and the draw is the one every validator shares",
            show_default="[chain] snapshot of --config, else none",
        ),
    ] = None,
    seed: Annotated[
        str | None,
        typer.Option(
            "--seed",
            help="a local round's seed (hex); chain mode takes the chain's",
            show_default="random",
            metavar="HEX",
        ),
    ] = None,
    tracks: Annotated[
        str | None, typer.Option("--tracks", help="comma-separated tracks", show_default="all")
    ] = None,
    db: DbOption = None,
    tasks: TasksOption = None,
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
    with user_errors():
        overrides = RoundOverrides(
            corpus=corpus,
            agents=tuple(agent or ()),
            round_seed=seed,
            tracks=parse_tracks(tracks) if tracks is not None else None,
            db=db,
            executor=executor,
            jobs=jobs,
            address=address,
            validator_id=validator_id,
            secret_file=secret_file,
        )
        # Submitted manifests alone: the bundled agents do not join them.
        config = round_config(config_file, overrides, bundled_agents_by_default=not manifest)
        subnet = snapshot or _subnet_of(chain_config(config_file), config.db)
        started = Round.start(
            config, manifests=tuple(manifest or ()), tasks_cap=tasks, notify=notify, subnet=subnet
        )
        result = drive(started)
        show_round(result, shown, output, html)
    exit_for(result)


def _subnet_of(chain: ChainConfig, db: Path) -> Path | None:
    """The `[chain]` table's subnet as a snapshot file: the one it names, else (a live
    subnet configured) the subnet read now, beside the round store; None for a local
    round."""
    if chain.snapshot is not None or chain.netuid is None:
        return chain.snapshot
    path = db.with_name("subnet.json")
    try:
        save_snapshot(chain, path)
    except ChainError as exc:
        fail(f"cannot read the chain for a chain-mode round: {exc}", EXIT_INFRA)
    return path


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
    with user_errors():
        how = ExecutionChoice(executor, jobs, address)
        started = Round.resume(round_id, db=db, secret_file=secret_file, how=how)
        result = drive(started)
        show_round(result, shown, output, html)
    exit_for(result)


@round_app.command("report")
def report_command(
    round_id: Annotated[str, typer.Argument(help="the round, e.g. round-0001")],
    db: DbOption = None,
    as_json: JsonOption = False,
    html: HtmlOption = None,
    fmt: FormatOption = None,
    output: OutputOption = None,
    config_file: ChainConfigOption = None,
    snapshot: SnapshotOption = None,
    uid: Annotated[
        int | None,
        typer.Option(
            "--as",
            min=0,
            help="the validator's UID in the --html consensus section",
            show_default="the [chain] hotkey's UID",
        ),
    ] = None,
) -> None:
    """Show a stored round: rankings, matrices, failures, weights. With --html and a
    snapshot (--snapshot or [chain] snapshot) the page previews the subnet's consensus on
    the round's weights."""
    shown = chosen_format(fmt, as_json, output)
    with user_errors():
        yuma = None
        if html is not None:
            yuma = round_preview(round_id, chain_config(config_file, snapshot=snapshot), uid, db=db)
        show_round(stored_result(round_id, db), shown, output, html, yuma)


@round_app.command("list")
def list_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Every round in the store, oldest first, with its status."""
    with user_errors():
        summaries = list_rounds(db)
    if as_json:
        emit_json([vars(s) for s in summaries])
        return
    table = Table(title=f"rounds in {db or default_db()}", title_justify="left")
    for column in ("round", "status", "tracks", "agents", "reps", "seed", "reason"):
        table.add_column(column, overflow="fold")
    for s in summaries:
        table.add_row(
            s.round_id,
            _status(s),
            ", ".join(s.tracks),
            str(s.agents),
            str(s.reps_stored),
            s.round_seed[:16],
            escape(printable(s.reason or "", 120)),
        )
    console.print(table)
    if not summaries:
        console.print("no rounds yet: `assay round run` starts one")
    if any(s.status == "interrupted" for s in summaries):
        console.print("interrupted: its process is gone; `assay round resume ROUND_ID` finishes it")


def _status(summary: RoundSummary) -> str:
    if not summary.abstained_tracks:
        return summary.status
    return f"{summary.status} (abstained on {', '.join(summary.abstained_tracks)})"


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
