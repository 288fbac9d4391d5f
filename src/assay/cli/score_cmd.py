"""`assay score`: scores and weights recomputed from recorded reps."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli import app
from assay.cli.output import emit_json, fail, print_scorecard
from assay.results.records import RecordError, read_records
from assay.results.scorecard import scorecard


@app.command("score")
def score_command(
    source: Annotated[
        Path, typer.Argument(help="JSON-lines file of rep records (see assay.results.records)")
    ],
    seed: Annotated[
        str, typer.Option("--seed", help="round seed: salts the tie-break between equal scores")
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Recompute per-track scores and the weight vector from recorded reps."""
    try:
        card = scorecard(read_records(source), salt=seed)
    except RecordError as exc:
        fail(f"{source}: {exc}")
    if as_json:
        emit_json({"status": "completed", **card.to_json_dict()})
    else:
        print_scorecard(card)
