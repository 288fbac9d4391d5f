"""`assay agent bundle` (a multi-module agent package as one submittable file) and
`assay agent submit` (a miner's signed submission to a validator's intake)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from assay.cli.attest_cmd import agent_app
from assay.cli.options import WalletPathOption
from assay.cli.output import console, emit_json, fail, user_errors
from assay.validator.api import DEFAULT_ENTRYPOINT, Track, bundle_package, pinned, submit_agent


@agent_app.command("bundle")
def bundle_command(
    directory: Annotated[Path, typer.Argument(help="the agent package (holds __init__.py)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="the single-file agent")],
    entrypoint: Annotated[
        str, typer.Option("--entrypoint", help="the function assay calls with the context")
    ] = DEFAULT_ENTRYPOINT,
) -> None:
    """Bundle an agent package into the one self-contained file the agent contract runs."""
    if not directory.is_dir():
        fail(f"{directory} is not a directory")
    with user_errors():
        result = bundle_package(directory, entrypoint, max_bytes=pinned().sandbox.agent_code_bytes)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(result.code)
    console.print(
        f"{escape(str(output))}: {len(result.code)} bytes, {len(result.modules)} modules",
        highlight=False,
    )


@agent_app.command("submit")
def submit_command(
    agent: Annotated[Path, typer.Argument(help="the agent file")],
    track: Annotated[Track, typer.Option("--track", help="the track the submission is for")],
    hotkey: Annotated[str, typer.Option("--hotkey", help="the miner's hotkey: WALLET/HOTKEY")],
    url: Annotated[str, typer.Option("--url", help="the validator's intake, http://HOST:PORT")],
    validator: Annotated[
        str | None,
        typer.Option("--validator", help="the validator's hotkey address the request is for"),
    ] = None,
    wallet_path: WalletPathOption = None,
) -> None:
    """Pin AGENT with the miner's hotkey and send it to a validator's intake (signed)."""
    with user_errors():
        status, answer = submit_agent(
            agent, track=track, hotkey=hotkey, url=url, validator=validator, wallet_path=wallet_path
        )
    emit_json({"status": status, **answer})
    if status != 200:
        raise typer.Exit(1)
