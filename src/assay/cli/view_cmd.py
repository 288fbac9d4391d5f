"""`assay view`: the read-only web viewer over a round store, on 127.0.0.1."""

from __future__ import annotations

from typing import Annotated

import typer

from assay.cli import app
from assay.cli.options import DbOption
from assay.cli.output import fail, user_errors
from assay.validator.api import default_db
from assay.viewer.serve import serve


@app.command("view")
def view_command(
    db: DbOption = None,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="port on 127.0.0.1 (0: any free one)")
    ] = 8765,
) -> None:
    """Browse the store's rounds, reports, agents and each task's reps in a web browser.

    Read-only: the store is opened for reading alone (a read-only mount works), and the
    server listens on 127.0.0.1 only. Ctrl-C stops it.
    """

    def announce(url: str) -> None:
        typer.echo(f"assay view: {url} (store {db or default_db()}, read-only; Ctrl-C stops)")

    with user_errors():
        try:
            serve(db or default_db(), port, announce)
        except OSError as exc:
            fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
