"""`assay score`: scores and weights recomputed from recorded reps."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from assay.cli import app
from assay.cli.output import emit_json, fail, print_scorecard, user_errors
from assay.validator.api import RecordError, pinned, report_format, score_file, stored_result


@app.command("score")
def score_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="FILE|ROUND_ID",
            help="a JSON-lines file of rep records, or with --db a stored round's id",
        ),
    ],
    db: Annotated[
        Path | None, typer.Option("--db", help="recompute a stored round from its rep rows")
    ] = None,
    seed: Annotated[
        str, typer.Option("--seed", help="records file: the round seed that salts tie-breaks")
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Recompute per-track scores and the weight vector from recorded reps."""
    if db is not None:
        _score_stored(db, source, as_json)
        return
    try:
        card = score_file(Path(source), salt=seed, spec=pinned())
    except RecordError as exc:
        fail(f"{source}: {exc}")
    if as_json:
        emit_json({"status": "completed", **card.to_json_dict()})
    else:
        print_scorecard(card)


def _score_stored(db: Path, round_id: str, as_json: bool) -> None:
    """A stored round recomputed from its rep rows, shown exactly as `round report` shows it."""
    with user_errors():
        result = stored_result(round_id, db)
    if as_json:
        sys.stdout.write(report_format("json").render(result))
    elif result.card is None:
        fail(f"round {round_id} is {result.status}: {result.reason}")
    else:
        print_scorecard(result.card, result.agents, result.weights)
