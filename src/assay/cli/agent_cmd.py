"""`assay agent bundle DIR -o agent.py`: a multi-module agent package as one submittable file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from assay.cli.attest_cmd import agent_app
from assay.cli.output import console, fail, user_errors
from assay.validator.api import DEFAULT_ENTRYPOINT, bundle_package, pinned


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
