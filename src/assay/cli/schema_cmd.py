"""`assay schema --track T`: the JSON Schema a track's report is validated against."""

from __future__ import annotations

from typing import Annotated

import typer

from assay.cli import app
from assay.cli.output import emit_json
from assay.validator.api import Track, report_json_schema


@app.command("schema")
def schema_command(
    track: Annotated[Track, typer.Option("--track", help="the track whose report schema to print")],
) -> None:
    """Print the JSON Schema of a valid agent report for a track (docs/agents.md explains it)."""
    emit_json(report_json_schema(track))
