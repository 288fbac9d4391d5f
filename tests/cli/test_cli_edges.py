"""The command line at its edges: inputs checked before any store, exit codes, formats,
round listing, and no traceback for a user."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from assay import __version__
from assay.validator.config import load_config

Assay = Callable[..., subprocess.CompletedProcess[str]]
ROOT = Path(__file__).resolve().parents[2]
KEYWORD = ROOT / "agents" / "keyword.py"
ALLOW_ALL = ROOT / "agents" / "allow_all.py"


def test_version(assay: Assay) -> None:
    assert assay("--version").stdout.strip() == f"assay {__version__}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("round", "run", "--tracks", "skills,skills"), "skills given more than once"),
        (("round", "run", "--seed", "zz"), "expected 1 to 128 hex digits"),
        (("round", "run", "--jobs", "0"), "--jobs"),
        (("round", "run", "--jobs", "-3"), "--jobs"),
        (("round", "run", "--corpus", "."), "is not a usable corpus"),
        (("eval", str(KEYWORD), "--track", "skills", "--corpus", "."), "is not a usable corpus"),
        (("round", "report", "round-0001"), "no round store at"),
        (("round", "list"), "no round store at"),
        (("score", "--db", "missing.db", "round-0001"), "no round store at"),
        (("round", "run", "--output", "r.txt"), "choose a --format other than table"),
        (("eval", str(KEYWORD), "--track", "skills", "-o", "r.txt"), "other than table"),
    ],
)
def test_bad_input_exits_2_before_any_store_exists(
    assay: Assay, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    (tmp_path / "stray-dir").mkdir()  # "." is then a folder that is not a corpus
    result = assay(*args, check=False)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not list(tmp_path.rglob("*.db")), "a read-only or refused command created a store"


def test_the_example_round_toml_is_a_valid_config(assay: Assay, tmp_path: Path) -> None:
    text = assay("round", "config", "--example").stdout
    assert tomllib.loads(text)["round"]["executor"] == "local"
    path = tmp_path / "round.toml"
    path.write_text(text)
    assert load_config(path).validator_id == "local"


def test_an_unexpected_error_is_one_line_and_a_traceback_file(tmp_path: Path) -> None:
    """A fault inside assay itself: exit 3, one line naming the traceback file."""
    script = (
        "import sys\n"
        "from assay import cli\n"
        "cli._register()\n"
        "@cli.app.command('explode')\n"
        "def explode() -> None:\n"
        "    raise RuntimeError('an internal fault')\n"
        "sys.argv = ['assay', 'explode']\n"
        "cli.main()\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 3
    (line,) = result.stderr.strip().splitlines()
    assert "RuntimeError: an internal fault" in line and "Traceback" not in line
    (saved,) = tmp_path.glob("assay-traceback-*.txt")
    assert str(saved) in line and "RuntimeError: an internal fault" in saved.read_text()
    assert "Traceback (most recent call last)" in saved.read_text()


@pytest.mark.sandbox
@pytest.mark.slow
def test_eval_formats_and_exit_codes(assay: Assay, skills_pair: Path, tmp_path: Path) -> None:
    base = ("eval", str(ALLOW_ALL), "--track", "skills", "--corpus", str(skills_pair))
    base += ("--reps", "1")  # one rep a task: the output, not consensus, is under test
    sarif = tmp_path / "out.sarif"
    result = assay(*base, "--format", "sarif", "--output", str(sarif), check=False)
    assert result.returncode == 1, "allow_all is never eligible"
    assert "exit 1: not eligible: score 0.000, threshold 0.20" in result.stderr
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    junit = assay(*base, "--format", "junit", check=False)
    suite = ET.fromstring(junit.stdout.encode()).find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    passing = assay(*base, "--fail-under", "0", "--format", "markdown", check=False)
    assert passing.returncode == 0 and passing.stdout.startswith("## assay eval")
    strict = assay(*base, "--fail-under", "0.5", "--json", check=False)
    assert strict.returncode == 1 and json.loads(strict.stdout)["score"] == 0.0
    assert "exit 1: score 0.000 is below --fail-under 0.5" in strict.stderr


@pytest.mark.sandbox
@pytest.mark.slow
def test_round_list_and_report_formats(assay: Assay, skills_pair: Path, tmp_path: Path) -> None:
    db = tmp_path / "rounds.db"
    run = ("round", "run", "--corpus", str(skills_pair), "--db", str(db), "--tracks", "skills")
    for _ in range(2):
        assay(*run, "--agent", str(KEYWORD), "--agent", str(ALLOW_ALL), "--seed", "ab")
    listed = json.loads(assay("round", "list", "--db", str(db), "--json").stdout)
    assert [r["round_id"] for r in listed] == ["round-0001", "round-0002"]
    assert all(r["status"] == "completed" and r["agents"] == 2 for r in listed)
    assert "round-0002" in assay("round", "list", "--db", str(db)).stdout
    for fmt, check in (
        ("markdown", lambda text: text.startswith("## assay round round-0002")),
        ("junit", lambda text: ET.fromstring(text.encode()).tag == "testsuites"),
        ("sarif", lambda text: json.loads(text)["version"] == "2.1.0"),
        ("json", lambda text: json.loads(text)["round_id"] == "round-0002"),
    ):
        text = assay("round", "report", "round-0002", "--db", str(db), "--format", fmt).stdout
        assert check(text), fmt
    out = tmp_path / "report.html"
    assay("round", "report", "round-0002", "--db", str(db), "--format", "html", "-o", str(out))
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_every_option_of_every_command_has_help() -> None:
    import click
    import typer

    from assay.cli import _register, app

    _register()
    root = typer.main.get_command(app)

    def walk(command: click.Command, path: str) -> list[str]:
        missing = [
            f"{path} {p.opts[0]}"
            for p in command.params
            if isinstance(p, click.Option) and not p.help
        ]
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                missing += walk(sub, f"{path} {name}")
        return missing

    assert walk(root, "assay") == []


@pytest.mark.sandbox
def test_output_to_a_fifo_or_a_symlink_writes_through_it_and_keeps_it(
    assay: Assay, skills_pair: Path, tmp_path: Path
) -> None:
    """`-o /dev/null` and the like: what is there is written to, never replaced by a file."""
    fifo, target, link = tmp_path / "pipe", tmp_path / "target.sarif", tmp_path / "link.sarif"
    os.mkfifo(fifo)
    link.symlink_to(target)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    base = ("eval", str(ALLOW_ALL), "--track", "skills", "--corpus", str(skills_pair))
    base += ("--reps", "1")  # one rep a task: the output, not consensus, is under test
    try:
        assay(*base, "--format", "sarif", "--output", str(fifo), check=False)
        piped, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()
    assert json.loads(piped)["version"] == "2.1.0"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assay(*base, "--format", "sarif", "--output", str(link), check=False)
    assert link.is_symlink() and json.loads(target.read_text())["version"] == "2.1.0"
    assert sorted(p.name for p in tmp_path.glob(".*partial")) == []


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def agent_main(context):\n    return {\n", "line 2: '{' was never closed"),
        ("def main(context):\n    return {}\n", "defines no top-level 'agent_main'"),
    ],
    ids=["syntax-error", "no-entrypoint"],
)
def test_an_agent_that_cannot_run_is_not_signed(
    assay: Assay, tmp_path: Path, source: str, problem: str
) -> None:
    assay("keys", "new", "--out", str(tmp_path / "keys"), "--name", "alice")
    agent = tmp_path / "broken.py"
    agent.write_text(source)
    result = assay(
        "agent", "pin", str(agent), "--track", "skills", "--key",
        str(tmp_path / "keys" / "alice.key"), check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert problem in result.stderr and "not signed" in result.stderr
    assert not list(tmp_path.glob("*.manifest.json"))


def test_tables_into_a_pipe_are_laid_out_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table read from a pipe or a log keeps whole hashes and names; a screen, or the
    width a user sets in COLUMNS, decides otherwise."""
    from assay.cli.output import _piped_width

    monkeypatch.delenv("COLUMNS", raising=False)
    assert _piped_width(io.StringIO()) == 160
    with open(os.devnull, "w") as devnull:
        assert _piped_width(devnull) == 160
    screen, terminal = os.openpty()
    with os.fdopen(terminal, "w") as tty:
        assert _piped_width(tty) is None
    os.close(screen)
    monkeypatch.setenv("COLUMNS", "100")
    assert _piped_width(io.StringIO()) is None
