"""`assay validator serve|status`: the long-running validator on a subnet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec
import typer

from assay.cli import app
from assay.cli.chain_cmd import (
    ConfigOption,
    HotkeyOption,
    NetuidOption,
    NetworkOption,
    SnapshotOption,
    WalletOption,
    chain_settings,
)
from assay.cli.options import JsonOption
from assay.cli.output import console, emit_json, user_errors
from assay.cli.progress import notify
from assay.validator.api import ServeStatus, serve_validator, validator_status

validator_app = typer.Typer(
    help="The long-running validator: rounds from a drop folder, weights on the subnet.",
    no_args_is_help=True,
)
app.add_typer(validator_app, name="validator")

StatusOption = Annotated[
    Path | None,
    typer.Option(
        "--status", help="the status file", show_default="serve-status.json in the data directory"
    ),
]


@validator_app.command("serve")
def serve_command(
    drop: Annotated[
        Path, typer.Option("--drop", help="folder of submissions (*.manifest.json beside agents)")
    ],
    config_file: ConfigOption = None,
    snapshot: SnapshotOption = None,
    network: NetworkOption = None,
    netuid: NetuidOption = None,
    wallet: WalletOption = None,
    hotkey: HotkeyOption = None,
    status: StatusOption = None,
    interval: Annotated[
        float, typer.Option("--interval", min=0, help="seconds between cycles")
    ] = 600.0,
    cycles: Annotated[
        int | None, typer.Option("--cycles", min=1, help="stop after this many cycles")
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option("--metrics-port", min=0, max=65535, help="Prometheus endpoint on localhost"),
    ] = None,
    intake_port: Annotated[
        int | None,
        typer.Option(
            "--intake-port", min=0, max=65535, help="the miners' HTTP intake on localhost"
        ),
    ] = None,
) -> None:
    """Read the subnet, run a round of the drop folder's submissions, set its weights;
    again after --interval. SIGTERM stops it with every finished rep stored."""
    chain = chain_settings(config_file, snapshot, network, netuid, wallet, hotkey)
    with user_errors():
        final = serve_validator(
            config_file,
            chain,
            drop=drop,
            status=status,
            cycles=cycles,
            interval_s=interval,
            metrics_port=metrics_port,
            intake_port=intake_port,
            notify=notify,
            say=_say,
        )
    _print_status(final)


def _say(line: str) -> None:
    console.print(line, highlight=False, markup=False, soft_wrap=True)


@validator_app.command("status")
def status_command(status: StatusOption = None, as_json: JsonOption = False) -> None:
    """What the serve loop is doing: phase, round, reps, last weights, retries, errors."""
    with user_errors():
        current = validator_status(status)
    if as_json:
        emit_json(msgspec.to_builtins(current))
        return
    _print_status(current)


def _print_status(status: ServeStatus) -> None:
    console.print(
        f"{status.phase}: round {status.round_id or '-'} "
        f"({status.reps_done}/{status.reps_total} reps), "
        f"{status.rounds_completed} rounds completed; last weights "
        f"{status.last_weights_round or '-'} at block {status.last_weights_block or '-'}; "
        f"{status.chain_retries} chain retries; {status.repushes} re-pushes",
        highlight=False,
        markup=False,
    )
    for notice in status.notices:
        console.print(f"  warning: {notice}", highlight=False, markup=False)
    for error in status.errors:
        console.print(f"  {error}", highlight=False, markup=False)
