"""The `assay` command line. Each command group lives in its own module.

Exit codes, as pytest and ruff use them:
  0  success
  1  it ran, but the result fails your bar (not eligible, every rep failed, --fail-under)
  2  usage or input error (a bad flag, a corpus that is not valid, a missing store)
  3  infrastructure fault: the validator abstained, or assay itself failed
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import traceback
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from assay import __version__

EXIT_OK = 0
EXIT_BAR = 1
EXIT_USAGE = 2
EXIT_INFRA = 3

EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 ran, but the result fails your bar (not eligible, every rep "
    "failed, --fail-under); 2 usage or input error; 3 infrastructure fault (abstained)."
)


@dataclass(frozen=True)
class _Entry:
    modules: tuple[str, ...]  # the assay.cli modules that add the command to `app`
    summary: str


# What `assay --help` lists, read without importing a command module: each one imports
# much of the validator (the SDKs, scipy), which made `--help` take seconds. This is how
# pip keeps its own command table; tests/cli/test_lazy_commands.py holds every summary to
# its command's own help.
COMMANDS: dict[str, _Entry] = {
    "eval": _Entry(
        ("eval_cmd",),
        "Score one agent locally with the validator's exact metric, through the real sandbox.",
    ),
    "demo": _Entry(
        ("eval_cmd",),
        "A full round of the bundled agents over the bundled corpus, with its report.",
    ),
    "score": _Entry(
        ("score_cmd",), "Recompute per-track scores and the weight vector from recorded reps."
    ),
    "schema": _Entry(
        ("schema_cmd",),
        "Print the JSON Schema of a valid agent report for a track (docs/agents.md explains it).",
    ),
    "agent": _Entry(("attest_cmd", "agent_cmd"), "Pin and sign agent submissions."),
    "keys": _Entry(("attest_cmd",), "ed25519 keys for authors and validators."),
    "attest": _Entry(("attest_cmd",), "Signed verdicts (SSSA): export and verify."),
    "detonate": _Entry(
        ("detonate_cmd",),
        "Detonate an artifact under the validator's observer and map what it did to capabilities.",
    ),
    "corpus": _Entry(("corpus_cmd",), "Author and check labelled corpora."),
    "round": _Entry(("round_cmd",), "Run, resume and report validator rounds."),
    "validator": _Entry(
        ("validator_cmd",),
        "The long-running validator: rounds from a drop folder, weights on the subnet.",
    ),
    "chain": _Entry(
        ("chain_cmd",),
        "Read a subnet's metagraph, set a round's weights on it, preview its consensus.",
    ),
    "sandbox": _Entry(("sandbox_cmd",), "The sealed sandbox agents run in."),
    "view": _Entry(
        ("view_cmd",),
        "Browse the store's rounds, reports, agents and each task's reps in a web browser.",
    ),
}


class _LazyGroup(TyperGroup):
    """The root command: a command's module is imported when that command is run or asked
    for its help, never to list the commands."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            for module in COMMANDS[cmd_name].modules:
                importlib.import_module(f"assay.cli.{module}")
            self.commands.update(typer.main.get_group(app).commands)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [
            (name, TyperCommand(name, help=entry.summary).get_short_help_str(limit))
            for name, entry in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    cls=_LazyGroup,
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
    """Add every command to `app` now (for callers that walk the whole tree, such as the
    help and documentation tests); `main` leaves each to be imported when it is used."""
    for entry in COMMANDS.values():
        for module in entry.modules:
            importlib.import_module(f"assay.cli.{module}")


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
    try:
        app()  # usage errors exit 2 and Ctrl-C 130 inside; anything else lands here
    except Exception as exc:
        sys.exit(_report_crash(exc))
