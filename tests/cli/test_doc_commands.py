"""Every `assay ...` and `btcli ...` command in README.md and docs/ parses against the
command it names: assay's own CLI and the pinned SDK's btcli, parsed as each would parse
it (every option known, every value of its type, required ones given), never run."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from assay import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
ENDS = {"|", "||", "&&", ";", ">", ">>", "2>", "&"}


def _commands(tool: str) -> Iterator[tuple[str, list[str]]]:
    """(where, argv after the tool's name) for each command line of a fenced block."""
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                command = re.split(r"\s{2,}", line.strip())[0]  # a usage line's gloss dropped
                try:
                    words = shlex.split(command, comments=True)
                except ValueError:
                    continue
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                    words = words[1:]  # VAR=value before the command
                if not words or words[0] != tool:
                    continue
                argv = words[1:]
                cut = next((i for i, w in enumerate(argv) if w in ENDS), len(argv))
                yield f"{doc.name}: {line.strip()}", argv[:cut]


PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(\.\w+)?|.*[\[\]<>…].*|.*\.\.\..*|.*\*.*")


def _synopsis(argv: list[str]) -> bool:
    """A usage line (`assay round list [--db FILE] [--json]  what it does`), not a command
    to run: only its subcommand and option names are checked."""
    return any(PLACEHOLDER.fullmatch(word) for word in argv)


def _parse(root: Any, argv: list[str], name: str) -> None:
    """Resolve the subcommand and parse its arguments as the command would."""
    command, path = root, [name]
    while hasattr(command, "commands") and argv and not argv[0].startswith("-"):
        found = command.get_command(None, argv[0])
        assert found is not None, f"no command {' '.join([*path, argv[0]])}"
        command, path, argv = found, [*path, argv[0]], argv[1:]
    if "--help" in argv or hasattr(command, "commands"):
        return
    if _synopsis(argv):
        known = {flag for param in command.params for flag in getattr(param, "opts", ())}
        named = {m for word in argv for m in re.findall(r"(?<![\w-])--?[a-z][\w-]*", word)}
        assert named <= known, f"{' '.join(path)}: no option {sorted(named - known)}"
        return
    try:
        command.make_context(" ".join(path), list(argv), resilient_parsing=False)
    except Exception as exc:  # click's usage errors, from typer's copy of click
        text = str(getattr(exc, "message", exc)) or type(exc).__name__
        if "does not exist" in text:  # a file the reader is to make: syntax is all we check
            return
        raise AssertionError(f"{' '.join(path)} {' '.join(argv)}: {text}") from exc


ASSAY = list(_commands("assay"))
BTCLI = list(_commands("btcli"))


def test_the_docs_have_commands_to_check() -> None:
    assert len(ASSAY) > 20 and len(BTCLI) >= 2


@pytest.mark.parametrize(("where", "argv"), ASSAY, ids=[w for w, _ in ASSAY])
def test_a_documented_assay_command_parses(where: str, argv: list[str]) -> None:
    cli._register()
    _parse(typer.main.get_command(cli.app), argv, "assay")


@pytest.mark.parametrize(("where", "argv"), BTCLI, ids=[w for w, _ in BTCLI])
def test_a_documented_btcli_command_parses(where: str, argv: list[str]) -> None:
    from bittensor.cli.main import app

    _parse(typer.main.get_command(app), argv, "btcli")
