"""`assay keys new`, `assay agent pin`, `assay attest export|verify`; `agent bundle` is in
agent_cmd."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from assay.attest import keys
from assay.attest.manifest import MANIFEST_SUFFIX, ManifestError, pin, write_manifest
from assay.attest.sssa import Export, SssaError, export_round, verify_file
from assay.cli import app
from assay.cli.output import console, emit_json, errors, fail, short
from assay.mechanism.spec import Track
from assay.runner.agent import DEFAULT_ENTRYPOINT
from assay.sandbox import InfrastructureError, default_backend
from assay.store.sqlite import StoreError
from assay.validator.round import Abstained

keys_app = typer.Typer(help="ed25519 keys for authors and validators.", no_args_is_help=True)
agent_app = typer.Typer(help="Pin and sign agent submissions.", no_args_is_help=True)
attest_app = typer.Typer(help="Signed verdicts (SSSA): export and verify.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(agent_app, name="agent")
app.add_typer(attest_app, name="attest")


@contextmanager
def _user_errors() -> Iterator[None]:
    try:
        yield
    except (keys.KeyFileError, ManifestError, SssaError, StoreError, Abstained) as exc:
        fail(str(exc))


@keys_app.command("new")
def keys_new(
    out: Annotated[Path, typer.Option("--out", help="folder for NAME.key and NAME.pub")],
    name: Annotated[
        str, typer.Option("--name", help="file stem: NAME.key and NAME.pub")
    ] = "author",
) -> None:
    """Write a new ed25519 keypair; the private key is created with mode 0600."""
    with _user_errors():
        pair = keys.new_keypair(out, name)
    console.print(
        f"private key {pair.private} (0600)\npublic key  {pair.public}: {pair.public_hex}"
    )


@agent_app.command("pin")
def agent_pin(
    agent: Annotated[Path, typer.Argument(help="the agent file")],
    track: Annotated[Track, typer.Option("--track", help="the track the submission is for")],
    key: Annotated[Path, typer.Option("--key", help="the author's private key")],
    entrypoint: Annotated[
        str, typer.Option("--entrypoint", help="the function assay calls with the context")
    ] = DEFAULT_ENTRYPOINT,
    model: Annotated[
        str | None, typer.Option("--model", help="the model to ask the round's upstream for")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help=f"default: beside AGENT as *{MANIFEST_SUFFIX}")
    ] = None,
) -> None:
    """Write a signed manifest pinning AGENT for TRACK (submit with `round run --manifest`)."""
    with _user_errors():
        if not agent.is_file():
            fail(f"agent {agent} is not a file")
        try:
            sandbox_digest = default_backend().digest
        except (InfrastructureError, OSError) as exc:
            fail(f"cannot identify the sandbox to pin: {exc}")
        path = out or agent.with_name(agent.stem + MANIFEST_SUFFIX)
        manifest = pin(
            agent,
            track=track,
            key=keys.load_private(key),
            entrypoint=entrypoint,
            sandbox_digest=sandbox_digest,
            manifest_path=path,
            model=model,
        )
        write_manifest(manifest, path)
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
    with _user_errors():
        if not db.is_file():
            fail(f"no round store at {db}")
        export = export_round(db, round_id, out, keys.load_private(key) if key else None)
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
    """Verify SSSAs offline; exits 1 naming what fails in each file that does not verify."""
    with _user_errors():
        expected = keys.read_public(key) if key else None
    results: dict[str, str] = {}
    for path in files:
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
    if any(v != "ok" for v in results.values()):
        raise typer.Exit(1)
