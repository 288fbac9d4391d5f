"""`assay --help` lists every command from the root's own table, importing none of them;
a command's help loads that command without the SDKs and libraries only running needs."""

from __future__ import annotations

import json
import subprocess
import sys

import typer

from assay import cli

PROBE = """
import json
import sys
sys.argv = ["assay", *{args!r}]
from assay.cli import main
try:
    main()
except SystemExit:
    pass
heavy = {heavy!r}
heavy_parents = tuple(name + "." for name in heavy)
print(json.dumps(sorted(m for m in sys.modules if m in heavy or m.startswith(heavy_parents))))
"""

# What running a round, serving an intake or setting weights needs, and help does not.
SLOW_LIBRARIES = ("bittensor", "datasketch", "scipy", "ray", "uvicorn", "starlette")


def _loaded(args: list[str], heavy: tuple[str, ...]) -> tuple[str, list[str]]:
    """What `assay ARGS` printed, and which of the modules `heavy` (or their submodules)
    it had imported when it ended."""
    probe = PROBE.format(args=args, heavy=heavy)
    shown = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    help_text, _, modules = shown.rstrip("\n").rpartition("\n")
    return help_text, json.loads(modules)


def test_each_listed_summary_is_its_command_s_own_help() -> None:
    cli._register()
    commands = typer.main.get_command(cli.app).commands  # type: ignore[attr-defined]
    assert set(commands) == set(cli.COMMANDS)
    for name, entry in cli.COMMANDS.items():
        assert commands[name].get_short_help_str(1000) == entry.summary, name


def test_the_root_help_lists_every_command_and_imports_none() -> None:
    commands = tuple(f"assay.cli.{m}" for entry in cli.COMMANDS.values() for m in entry.modules)
    shown, loaded = _loaded(["--help"], (*commands, "assay.validator", *SLOW_LIBRARIES))
    assert loaded == []
    for name, entry in cli.COMMANDS.items():
        # Each summary is cut to the terminal's width: its first words are shown.
        assert f"  {name} " in shown and entry.summary[:30] in shown, name


def test_a_command_s_help_loads_it_without_the_slow_libraries() -> None:
    for args in (["eval", "--help"], ["validator", "serve", "--help"], ["agent", "--help"]):
        shown, loaded = _loaded(args, SLOW_LIBRARIES)
        assert f"Usage: assay {' '.join(args[:-1])}" in shown
        assert loaded == [], args


def test_a_mistyped_command_is_a_usage_error_naming_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assay", "evl"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "No such command 'evl'" in done.stderr
