"""Every option's help is printed as written: "[chain]" and "[inference]" (the round.toml
tables options name) are text, not markup to be eaten."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from assay import cli
from inprocess_cli import run_cli


# Typer builds its commands on its own copy of click: groups are told by their commands.
def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name)


def _command(path: tuple[str, ...]) -> Any:
    command: Any = typer.main.get_command(cli.app)
    for name in path:
        command = command.commands[name]
    return command


def test_every_option_help_is_shown_whole() -> None:
    cli._register()
    bracketed = 0
    for path in _commands(typer.main.get_command(cli.app)):
        shown = " ".join(run_cli([*path, "--help"], env={"COLUMNS": "400"}).stdout.split())
        for param in _command(path).params:
            written = " ".join((getattr(param, "help", None) or "").split())
            bracketed += "[" in written
            assert written in shown, (path, param.name)
    assert bracketed >= 2, "no help names a [table]: the test proves nothing"
