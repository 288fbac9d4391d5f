"""`assay keys new`, `assay agent pin`, `assay attest export|verify`; `agent bundle` is in
agent_cmd."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from assay.cli import EXIT_BAR, EXIT_USAGE, app
from assay.cli.options import WalletPathOption
from assay.cli.output import console, emit_json, errors, short, user_errors
from assay.validator.api import (
    DEFAULT_ENTRYPOINT,
    MANIFEST_SUFFIX,
    Export,
    SssaError,
    Track,
    export_attestations,
    new_keypair,
    pin_agent,
    read_public,
    verify_file,
)

keys_app = typer.Typer(help="ed25519 keys for authors and validators.", no_args_is_help=True)
agent_app = typer.Typer(help="Pin and sign agent submissions.", no_args_is_help=True)
attest_app = typer.Typer(help="Signed verdicts (SSSA): export and verify.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(agent_app, name="agent")
app.add_typer(attest_app, name="attest")


@keys_app.command("new")
def keys_new(
    out: Annotated[Path, typer.Option("--out", help="folder for NAME.key and NAME.pub")],
    name: Annotated[
        str, typer.Option("--name", help="file stem: NAME.key and NAME.pub")
    ] = "author",
) -> None:
    """Write a new ed25519 keypair; the private key is created with mode 0600."""
    with user_errors():
        pair = new_keypair(out, name)
    console.print(
        f"private key {pair.private} (0600)\npublic key  {pair.public}: {pair.public_hex}"
    )


@agent_app.command("pin")
def agent_pin(
    agent: Annotated[Path, typer.Argument(help="the agent file")],
    track: Annotated[Track, typer.Option("--track", help="the track the submission is for")],
    key: Annotated[Path | None, typer.Option("--key", help="the author's private key")] = None,
    hotkey: Annotated[
        str | None,
        typer.Option("--hotkey", help="sign with a miner's hotkey instead: WALLET/HOTKEY"),
    ] = None,
    wallet_path: WalletPathOption = None,
    entrypoint: Annotated[
        str, typer.Option("--entrypoint", help="the function assay calls with the context")
    ] = DEFAULT_ENTRYPOINT,
    model: Annotated[
        str | None, typer.Option("--model", help="the model to ask the round's upstream for")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help=f"default: beside AGENT as AGENT.TRACK{MANIFEST_SUFFIX}"),
    ] = None,
) -> None:
    """Write a signed manifest pinning AGENT for TRACK (submit with `round run --manifest`)."""
    with user_errors():
        path, manifest = pin_agent(
            agent,
            track=track,
            key=key,
            hotkey=hotkey,
            wallet_path=wallet_path,
            entrypoint=entrypoint,
            model=model,
            out=out,
        )
    console.print(f"manifest {path}: {track.value}, code sha256 {manifest.code_sha256}")


@attest_app.command("export")
def attest_export(
    round_id: Annotated[str, typer.Argument()],
    db: Annotated[Path, typer.Option("--db", help="round store (SQLite file)")],
    out: Annotated[Path, typer.Option("--out", help="folder for the SSSA files")],
    key: Annotated[
        Path | None,
        typer.Option(
            "--key", help="validator private key (default: validator.key in the data dir)"
        ),
    ] = None,
) -> None:
    """Write one signed SSSA per agent × task of a completed round."""
    with user_errors():
        export = export_attestations(db, round_id, out, key)
    announce_new_key(export)
    console.print(f"wrote {len(export.written)} SSSA files under {out}")
    for skipped in export.skipped:
        errors.print(
            f"skipped {short(skipped.agent_hash)} on {skipped.track}/{skipped.task_id}: "
            f"{skipped.reason}",
            markup=False,
            soft_wrap=True,
        )


def announce_new_key(export: Export) -> None:
    if export.key_created is not None:
        errors.print(
            f"created the validator's signing key at {export.key_created} (mode 0600): every "
            "SSSA is signed with it; keep it, so consumers can pin its public key "
            "(attestation.validator_key, `assay attest verify --key`) across rounds",
            markup=False,
            soft_wrap=True,
        )


@attest_app.command("verify")
def attest_verify(
    files: Annotated[list[Path], typer.Argument(help="SSSA JSON files")],
    key: Annotated[
        str | None,
        typer.Option("--key", help="expected validator public key (hex or .pub file)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Verify SSSAs offline; exits 1 naming what fails in each file that does not verify,
    2 when a file is not there to verify."""
    with user_errors():
        expected = read_public(key) if key else None
    results: dict[str, str] = {}
    missing = [path for path in files if not path.is_file()]
    for path in files:
        if path in missing:
            results[str(path)] = "not a file"
            if not as_json:
                errors.print(f"error: {escape(str(path))}: not a file", soft_wrap=True)
            continue
        try:
            verified = verify_file(path, validator_key=expected)
            results[str(path)] = "ok"
            if not as_json:
                console.print(
                    "[green]ok[/] "
                    + escape(
                        f"{path}: {verified.track}/{verified.task_id} "
                        f"{verified.decision or 'no verdict'}, signed by {verified.validator_key}"
                    ),
                    highlight=False,
                )
        except SssaError as exc:
            results[str(path)] = str(exc)
            if not as_json:
                errors.print(
                    f"[bold red]FAILED[/] {escape(f'{path}: {exc}')}",
                    highlight=False,
                    soft_wrap=True,
                )
    if as_json:
        emit_json({"verified": all(v == "ok" for v in results.values()), "files": results})
    if missing:
        raise typer.Exit(EXIT_USAGE)
    if any(v != "ok" for v in results.values()):
        raise typer.Exit(EXIT_BAR)
