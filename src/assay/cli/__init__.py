"""The `assay` command line. Each command group lives in its own module.

Exit codes, as pytest and ruff use them:
  0  success
  1  it ran, but the result fails your bar (not eligible, every rep failed, --fail-under)
  2  usage or input error (a bad flag, a corpus that is not valid, a missing store)
  3  infrastructure fault: the validator abstained, or assay itself failed
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from typing import Annotated

import typer

from assay import __version__

EXIT_OK = 0
EXIT_BAR = 1
EXIT_USAGE = 2
EXIT_INFRA = 3

EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 ran, but the result fails your bar (not eligible, every rep "
    "failed, --fail-under); 2 usage or input error; 3 infrastructure fault (abstained)."
)

app = typer.Typer(
    name="assay",
    help=f"A validator for security-audit agents.\n\n{EXIT_CODES_HELP}",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help is plain text: as rich markup, "[chain]" and "[inference]" (the round.toml
    # tables the options name) would be read as styles and vanish.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """A validator for security-audit agents."""


def _register() -> None:
    # Imported for their side effect of adding commands to `app`.
    from assay.cli import (
        agent_cmd,  # noqa: F401
        attest_cmd,  # noqa: F401
        chain_cmd,  # noqa: F401
        corpus_cmd,  # noqa: F401
        detonate_cmd,  # noqa: F401
        eval_cmd,  # noqa: F401
        round_cmd,  # noqa: F401
        sandbox_cmd,  # noqa: F401
        schema_cmd,  # noqa: F401
        score_cmd,  # noqa: F401
        validator_cmd,  # noqa: F401
        view_cmd,  # noqa: F401
    )


def _report_crash(exc: BaseException) -> int:
    """One line for the user, the whole traceback in a file they can attach to a report."""
    with tempfile.NamedTemporaryFile(
        "w", prefix="assay-traceback-", suffix=".txt", delete=False
    ) as handle:
        traceback.print_exception(exc, file=handle)
    from assay.validator.api import visible  # the crash path alone needs it

    name = type(exc).__name__
    message = visible(str(exc))[:300]
    sys.stderr.write(
        f"error: assay failed unexpectedly ({name}: {message}). Nothing was half-written; "
        f"rerun with the same arguments, or report it with the traceback in {handle.name}\n"
    )
    return EXIT_INFRA


def main() -> None:
    if sys.argv[1:] == ["--version"]:  # needs none of the commands, so none are imported
        typer.echo(f"assay {__version__}")
        return
    _register()
    try:
        app()  # usage errors exit 2 and Ctrl-C 130 inside; anything else lands here
    except Exception as exc:
        sys.exit(_report_crash(exc))
