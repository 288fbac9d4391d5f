"""`assay chain snapshot|weights|preview`: the subnet a validator sets weights on."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from assay.cli import EXIT_INFRA, app
from assay.cli.options import DbOption, JsonOption
from assay.cli.output import console, emit_json, fail, user_errors
from assay.validator.api import (
    ChainConfig,
    ChainError,
    ChainWeights,
    Preview,
    chain_config,
    chain_weights,
    preview_file,
    save_snapshot,
    synthetic_snapshot_file,
)

chain_app = typer.Typer(
    help="Read a subnet's metagraph, set a round's weights on it, preview its consensus.",
    no_args_is_help=True,
)
app.add_typer(chain_app, name="chain")

ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="round.toml whose [chain] table to use")
]
SnapshotOption = Annotated[
    Path | None,
    typer.Option("--snapshot", help="a metagraph snapshot file instead of the live chain"),
]
NetworkOption = Annotated[
    str | None,
    typer.Option(
        "--network", help="finney, test, local or a ws(s):// endpoint", show_default="finney"
    ),
]
NetuidOption = Annotated[int | None, typer.Option("--netuid", min=0, help="the subnet")]
WalletOption = Annotated[
    str | None, typer.Option("--wallet", help="the wallet's name", show_default="default")
]
HotkeyOption = Annotated[
    str | None,
    typer.Option(
        "--hotkey",
        help="the hotkey's name in the wallet (with --snapshot: the hotkey's address)",
        show_default="default",
    ),
]


def chain_settings(
    config_file: Path | None,
    snapshot: Path | None,
    network: str | None,
    netuid: int | None,
    wallet: str | None = None,
    hotkey: str | None = None,
) -> ChainConfig:
    with user_errors():
        return chain_config(
            config_file,
            snapshot=snapshot,
            network=network,
            netuid=netuid,
            wallet=wallet,
            hotkey=hotkey,
        )


@chain_app.command("snapshot")
def snapshot_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="the snapshot file to write")],
    config_file: ConfigOption = None,
    network: NetworkOption = None,
    netuid: NetuidOption = None,
    synthetic: Annotated[
        int | None,
        typer.Option("--synthetic", min=1, help="make up a subnet of this many UIDs instead"),
    ] = None,
    validators: Annotated[
        int, typer.Option("--validators", min=1, help="validators of a --synthetic subnet")
    ] = 4,
    register: Annotated[
        list[str] | None,
        typer.Option("--register", help="a hotkey a --synthetic subnet registers (repeat)"),
    ] = None,
    seed: Annotated[str, typer.Option("--seed", help="seed of a --synthetic subnet")] = "assay",
) -> None:
    """Write the subnet's metagraph (hotkeys, stake, permits, weights, limits) to a file."""
    with user_errors():
        if synthetic is not None:
            snapshot = synthetic_snapshot_file(
                out,
                netuid=netuid or 0,
                uids=synthetic,
                validators=validators,
                register=tuple(register or ()),
                seed=seed,
            )
        else:
            config = chain_settings(config_file, None, network, netuid)
            try:
                snapshot = save_snapshot(config, out)
            except ChainError as exc:
                fail(f"cannot read the chain: {exc}", EXIT_INFRA)
    console.print(
        f"{escape(str(out))}: subnet {snapshot.netuid} at block {snapshot.block}, "
        f"{len(snapshot.neurons)} UIDs, "
        f"{sum(n.validator_permit for n in snapshot.neurons)} validators",
        highlight=False,
    )


@chain_app.command("weights")
def weights_command(
    round_id: Annotated[str, typer.Argument(help="a completed round, e.g. round-0001")],
    config_file: ConfigOption = None,
    snapshot: SnapshotOption = None,
    network: NetworkOption = None,
    netuid: NetuidOption = None,
    wallet: WalletOption = None,
    hotkey: HotkeyOption = None,
    db: DbOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="show the UID vector; set nothing")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="set a round whose weights the chain took already")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """A completed round's weights as the UID vector the chain takes, and set them."""
    config = chain_settings(config_file, snapshot, network, netuid, wallet, hotkey)
    with user_errors():
        try:
            result = chain_weights(
                round_id, config, db=db, config_file=config_file, dry_run=dry_run, force=force
            )
        except ChainError as exc:
            fail(f"cannot read the chain: {exc}", EXIT_INFRA)
    if as_json:
        emit_json(result.to_json())
    else:
        _print_weights(result)
    if result.receipt is not None and not result.receipt.success:
        raise typer.Exit(EXIT_INFRA)


def _print_weights(result: ChainWeights) -> None:
    vector = result.vector
    total = sum(vector.weights) or 1
    console.print(
        f"{result.round_id} on subnet {result.netuid} (block {result.block})", highlight=False
    )
    table = Table()
    for column in ("uid", "u16", "share"):
        table.add_column(column, justify="right")
    for uid, value in zip(vector.uids, vector.weights, strict=True):
        table.add_row(str(uid), str(value), f"{value / total:.4f}")
    console.print(table)
    for note in vector.notes:
        console.print(f"conformed: {escape(note)}", highlight=False)
    for dropped in vector.dropped:
        who = dropped.hotkey or ", ".join(a[:12] for a in dropped.agents)
        console.print(
            f"dropped {escape(who)} ({dropped.weight:.4f}): {dropped.reason}", highlight=False
        )
    receipt = result.receipt
    if receipt is None:
        console.print("dry run: nothing set", highlight=False)
    elif receipt.success:
        console.print(
            f"set at block {receipt.block} after {receipt.attempts} attempt(s): "
            f"{escape(receipt.message)}",
            highlight=False,
        )
    else:
        console.print(f"[bold red]not set:[/] {escape(receipt.message)}", highlight=False)


@chain_app.command("preview")
def preview_command(
    snapshot: Annotated[Path, typer.Option("--snapshot", help="a metagraph snapshot file")],
    uid: Annotated[int, typer.Option("--as", min=0, help="the validator's UID")],
    weights: Annotated[
        str | None, typer.Option("--weights", help="the round whose weights to preview")
    ] = None,
    weights_file: Annotated[
        Path | None, typer.Option("--weights-file", help="a JSON object from UID to weight")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Yuma consensus on a snapshot with this validator's row replaced by its weights.

    Per miner the consensus and incentive; for the validator its vtrust and the miners
    where it disagrees most. Kappa and the owner are the snapshot's."""
    with user_errors():
        result = preview_file(snapshot, uid, round_id=weights, weights_file=weights_file, db=db)
    if as_json:
        emit_json(result.to_json())
        return
    _print_preview(result)


def _print_preview(preview: Preview) -> None:
    r = preview.result
    console.print(
        f"Yuma on subnet {preview.netuid} (block {preview.block}) with UID {preview.uid}'s row",
        highlight=False,
    )
    table = Table()
    for column in ("miner", "weight", "consensus", "incentive"):
        table.add_column(column, justify="right")
    for miner in sorted(r.incentive, key=lambda m: (-r.incentive[m], m)):
        if r.incentive[miner] > 0 or miner in preview.row:
            table.add_row(
                str(miner),
                f"{preview.row.get(miner, 0.0):.4f}",
                f"{r.consensus[miner]:.4f}",
                f"{r.incentive[miner]:.4f}",
            )
    console.print(table)
    permit = "" if preview.permit else " (no validator permit: its row does not vote)"
    console.print(
        f"vtrust of UID {preview.uid}: {r.vtrust.get(preview.uid, 0.0):.4f}{permit}",
        highlight=False,
    )
    others = ", ".join(f"{v}: {t:.3f}" for v, t in sorted(r.vtrust.items()) if v in r.stake)
    console.print(f"vtrust of the voting validators: {others}", highlight=False)
    for d in preview.disagreements:
        console.print(
            f"  miner {d.miner}: weight {d.weight:.4f}, consensus {d.consensus:.4f} "
            f"({d.difference:+.4f})",
            highlight=False,
        )
