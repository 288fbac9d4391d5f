"""`assay agent bundle`: a package becomes one deterministic, self-contained, runnable file."""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.mechanism.spec import Track
from assay.runner.bundle import BundleError, bundle_package
from assay.runner.context import local_context
from assay.schema.mechanism_file import pinned
from assay.validator.config import bundled_agents
from inprocess_cli import run_cli

LIMIT = pinned().sandbox.agent_code_bytes
ROOT = Path(__file__).resolve().parents[1]
Assay = Callable[..., subprocess.CompletedProcess[str]]
REFERENCE = ROOT / "agents" / "reference"

# Runs an agent file the way the sandbox shim does: compiled from its bytes alone, in a fresh
# interpreter whose path holds nothing of the package.
RUNNER = """
import json, sys, types
code = open(sys.argv[1], "rb").read()
module = types.ModuleType("agent")
exec(compile(code, "agent.py", "exec"), module.__dict__)
print(json.dumps(module.agent_main(json.loads(sys.argv[2])), sort_keys=True))
"""


def _run_file(agent: Path, context: dict[str, object], cwd: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-I", "-c", RUNNER, str(agent), json.dumps(context)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_bundling_is_deterministic_and_within_the_code_limit(tmp_path: Path) -> None:
    first = bundle_package(REFERENCE, max_bytes=LIMIT)
    second = bundle_package(REFERENCE, max_bytes=LIMIT)
    assert first.code == second.code
    assert len(first.code) <= LIMIT
    assert "reference.repo_python" in first.modules


def test_the_cli_writes_the_bundle_and_it_runs_alone(tmp_path: Path) -> None:
    out = tmp_path / "agent.py"
    bundled = run_cli(["agent", "bundle", str(REFERENCE), "-o", str(out)])
    assert bundled.returncode == 0, bundled.stderr
    assert out.read_bytes() == bundle_package(REFERENCE, max_bytes=LIMIT).code
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text(
        "import subprocess\nfrom flask import Flask, request\napp = Flask(__name__)\n"
        "@app.route('/ping')\ndef ping():\n"
        "    return subprocess.check_output('ping -c1 ' + request.args['host'], shell=True)\n"
    )
    context = local_context(Track.REPOSITORIES, repo, tmp_path)
    report = _run_file(out, context, tmp_path)
    vulns = report["evidence"]["vulnerabilities"]  # type: ignore[index]
    assert [(v["file"], v["line"], v["cwe"]) for v in vulns] == [("app.py", 6, "CWE-78")]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "mine"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_absolute_and_relative_imports_and_subpackages_resolve(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "from .util.words import word\n"
            "def agent_main(context):\n    return {'verdict': word()}\n",
            "util/__init__.py": "",
            "util/words.py": "from mine.util.base import BASE\ndef word():\n    return BASE\n",
            "util/base.py": "BASE = 'ALLOW'\n",
        },
    )
    out = tmp_path / "agent.py"
    out.write_bytes(bundle_package(package, max_bytes=LIMIT).code)
    assert _run_file(out, {}, tmp_path) == {"verdict": "ALLOW"}


def test_every_source_reads_back_exactly_whichever_quotes_and_backslashes_it_holds(
    tmp_path: Path,
) -> None:
    awkward = {
        "regex.py": "import re\nPATTERN = re.compile(r'\\d+\\s*\\\\')\nTEXT = 'a\\tb\\n'\n",
        "single.py": "DOC = '''three single quotes'''\n",
        "both.py": "A = '''x'''\nB = \"\"\"y\"\"\"\n",
        "trailing.py": "X = 1  # ends in a backslash \\",
        "quote_last.py": "Y = 'q'",
    }
    package = _package(tmp_path, {"__init__.py": "agent_main = 1\n", **awkward})
    # Read as the sandbox reads the file: parsed from its bytes.
    tree = ast.parse(bundle_package(package, max_bytes=LIMIT).code)
    table = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_MODULES"
    )
    modules = ast.literal_eval(table)
    for name, text in awkward.items():
        assert modules["mine." + name.removesuffix(".py")] == (False, text)
    # The reference agent's modules, regular expressions and all, cost about what they weigh.
    reference = bundle_package(REFERENCE, max_bytes=LIMIT)
    weight = sum(len(p.read_text().encode()) for p in REFERENCE.rglob("*.py"))
    assert len(reference.code) < weight + 3000


def test_blocks_are_indented_one_space_a_level_and_strings_and_line_numbers_are_kept(
    tmp_path: Path,
) -> None:
    nested = (
        "def agent_main(context):\n"
        '    """Doc.\n\n        indented inside the docstring\n    """\n'
        "    total = sum(\n        [1, 2,\n         3]\n    )\n"
        "    if total:\n        text = '''a\n    b'''\n"
        "        return {'verdict': text, 'line': line()}\n"
        "    return {}\n\n\n"
        "def line():\n    import inspect\n    return inspect.currentframe().f_lineno\n"
    )
    two_spaces = "def f():\n  return 1\n"
    package = _package(tmp_path, {"__init__.py": nested, "two.py": two_spaces})
    out = tmp_path / "agent.py"
    out.write_bytes(bundle_package(package, max_bytes=LIMIT).code)
    assert _run_file(out, {}, tmp_path) == {"verdict": "a\n    b", "line": 19}
    tree = ast.parse(out.read_bytes())
    table = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_MODULES"
    )
    modules = ast.literal_eval(table)
    shallow = modules["mine"][1]
    assert "\n total = sum(\n" in shallow and "\n if total:\n  text = '''a\n    b'''" in shallow
    assert "        indented inside the docstring\n" in shallow
    assert ast.dump(ast.parse(shallow)) == ast.dump(ast.parse(nested))
    assert modules["mine.two"][1] == two_spaces  # not indented by fours: kept as it is


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"a.py": "x = 1\n"}, "no __init__.py"),
        ({"__init__.py": "def agent_main(c):\n  return {}\n", "b.py": "def f(:\n"}, "b.py"),
        ({"__init__.py": "def other(c):\n    return {}\n"}, "does not define 'agent_main'"),
        ({"__init__.py": "agent_main = 1\n", "big.py": "x = '" + "a" * 300_000 + "'\n"}, "exceeds"),
        ({"__init__.py": "agent_main = 1\n", "bad-name.py": "x = 1\n"}, "not a module name"),
    ],
)
def test_what_cannot_be_bundled_is_refused_by_name(
    tmp_path: Path, files: dict[str, str], reason: str
) -> None:
    with pytest.raises(BundleError, match=reason):
        bundle_package(_package(tmp_path, files), max_bytes=LIMIT)


@pytest.mark.sandbox
def test_rounds_and_the_demo_run_the_bundled_package(
    assay: Assay, skills_pair: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --agent a round takes the bundled agents, the reference package bundled."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert bundle_package(REFERENCE, max_bytes=LIMIT).code in {
        p.read_bytes() for p in bundled_agents()
    }
    args = ["round", "run", "--corpus", str(skills_pair), "--db", str(tmp_path / "r.db")]
    payload = json.loads(assay(*args, "--seed", "5eed", "--tracks", "skills", "--json").stdout)
    reference = hashlib.sha256(bundle_package(REFERENCE, max_bytes=LIMIT).code).hexdigest()
    result = payload["scores"]["skills"][reference]
    assert result["failed_reps"] == 0
    assert result["clamped_mcc"] == 1.0
