"""The `assay` command line. Each command group lives in its own module."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="assay",
    help="A validator for security-audit agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """A validator for security-audit agents."""


def _register() -> None:
    # Imported for their side effect of adding commands to `app`.
    from assay.cli import (
        attest_cmd,  # noqa: F401
        corpus_cmd,  # noqa: F401
        detonate_cmd,  # noqa: F401
        round_cmd,  # noqa: F401
        sandbox_cmd,  # noqa: F401
        schema_cmd,  # noqa: F401
        score_cmd,  # noqa: F401
    )


def main() -> None:
    _register()
    app()
