"""Planning and the harness's pure parts, without a sandbox (issue 26)."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.detonate.core import load_notes
from assay.detonate.harness import (
    VARIATIONS_PER_TOOL,
    Child,
    LoadClock,
    argument_variations,
    call_rounds,
    merge_env,
    session_usage,
)
from assay.detonate.steps import PYTHON, artifact_place, build_plan
from assay.detonate.wire import HarnessLog, McpTool, StepLog
from assay.mechanism.spec import Track


def test_a_step_env_adds_and_extends_but_never_replaces() -> None:
    base = {"PATH": "/usr/bin", "HOME": "/home/u"}
    extra = {
        "PATH": "/opt/x",
        "HOME": "/tmp",
        "PYTHONNOUSERSITE": "1",
        "FAKETIME_DONT_RESET": "1",
        "LD_PRELOAD": "/x.so",
        "NOTES_MODE": "sync",
    }
    assert merge_env(base, extra) == {
        "PATH": "/usr/bin:/opt/x",
        "HOME": "/home/u",
        "LD_PRELOAD": "/x.so",
        "NOTES_MODE": "sync",
    }
    assert merge_env({"LD_PRELOAD": "/faketime.so"}, {"LD_PRELOAD": ""}) == {
        "LD_PRELOAD": "/faketime.so"
    }


def test_python_flags_that_drop_the_hooks_are_not_passed(tmp_path: Path) -> None:
    manifest = {"command": "python3", "args": ["-s", "-E", "-m", "notes_server"]}
    (tmp_path / "mcp.json").write_text(json.dumps(manifest))
    plan = build_plan(tmp_path, Track.MCP_SERVERS, "t0k3n")
    assert plan.core[-1].argv == (PYTHON, "-m", "notes_server")


def _tool(name: str, properties: dict[str, object]) -> McpTool:
    return McpTool(name, "", {"type": "object", "properties": properties})


def test_variations_change_one_argument_at_a_time_declared_values_first() -> None:
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "mode": {"type": "string", "enum": ["read", "sync", "purge"]},
            "dry": {"type": "boolean"},
            "title": {"type": "string"},
        },
    }
    base = {"count": 1, "mode": "read", "dry": True, "title": "c4n4ry"}
    assert argument_variations(schema, "c4n4ry") == [
        ("", base),
        ('mode="sync"', {**base, "mode": "sync"}),
        ('mode="purge"', {**base, "mode": "purge"}),
        ("count=0", {**base, "count": 0}),
        ("count=-1", {**base, "count": -1}),
        ("count=2", {**base, "count": 2}),
        ("count=1000000", {**base, "count": 1_000_000}),
        ("dry=false", {**base, "dry": False}),
    ]


def test_rounds_call_every_tool_before_any_variation_and_cap_what_is_left_out() -> None:
    wide = _tool("wide", {f"n{k}": {"type": "number"} for k in range(3)})  # 12 variations
    plain = _tool("plain", {"q": {"type": "string"}})
    rounds, left_out = call_rounds([wide, plain], "c")
    first, varied, repeated = rounds
    assert [(t.name, label) for t, label, _ in first] == [("wide", ""), ("plain", "")]
    assert len(varied) == VARIATIONS_PER_TOOL and {t.name for t, _, _ in varied} == {"wide"}
    assert left_out == 12 - VARIATIONS_PER_TOOL
    assert [label for _, label, _ in repeated] == ["repeat 2", "repeat 3"] * 2


# --- steps bounded by CPU time, with a wall backstop (issue 24) -----------------------------

SPIN = (sys.executable, "-c", "while True: pass")
SLEEP = (sys.executable, "-c", "import time; time.sleep(600)")


def _run(argv: tuple[str, ...], timeout_s: float, backstop_s: float) -> tuple[int | None, str]:
    code, _, _, stopped = Child(list(argv), "/", dict(os.environ), b"").wait(timeout_s, backstop_s)
    return code, stopped


def test_a_step_that_exits_is_not_stopped() -> None:
    assert _run((sys.executable, "-c", "pass"), 30.0, 60.0) == (0, "")


def test_an_idle_step_ends_at_its_timeout_however_busy_the_host() -> None:
    assert _run(SLEEP, 0.3, 60.0) == (None, "idle")


def test_a_working_step_ends_when_its_cpu_budget_is_spent() -> None:
    assert _run(SPIN, 0.3, 600.0) == (None, "cpu")


def test_a_step_still_working_at_its_backstop_is_stopped_there() -> None:
    """A step the host gives no CPU (its budget never spent) ends at the backstop."""
    child = subprocess.Popen(SPIN, start_new_session=True)
    try:
        clock = LoadClock(child.pid, 0.1, 0.5, cpu_s=math.inf)
        verdicts = iter(clock.verdict, "wall")  # polled until the backstop says so
        assert set(itertools.islice(verdicts, 10_000)) <= {""}
        _, busy = session_usage(child.pid)
        assert busy and clock.cpu_s > 0
    finally:
        child.kill()
        child.wait()


def test_a_step_run_twice_for_load_is_marked_in_the_observation() -> None:
    log = HarnessLog(
        steps=(
            StepLog("retried", exit=0, attempts=2),
            StepLog("walled", exit=None, timed_out=True, stopped="wall", attempts=2),
            StepLog("plain", exit=0),
        )
    )
    (note,) = load_notes(log)
    assert note.startswith("step 'retried' ran twice")


def _big_skill(root: Path, scripts: int) -> Path:
    """`scripts` helper scripts, and two ~250 KB documents whose code blocks invoke every
    seventh of them, line after line."""
    (root / "scripts").mkdir(parents=True)
    names = [f"s{n}.py" for n in range(scripts)]
    for name in names:
        (root / "scripts" / name).write_text("print(1)\n")
    usage = "".join(f"python3 scripts/{name} --x {name}.md\n" for name in names[::7])
    block = f"```\n{usage}```\n"
    text = (block * (250_000 // len(block) + 1))[:250_000]
    for doc in ("SKILL.md", "README.md"):
        (root / doc).write_text(text)
    return root


def test_planning_past_its_budget_is_named_and_the_documented_scripts_still_run(
    tmp_path: Path,
) -> None:
    plan = build_plan(_big_skill(tmp_path, 4_900), Track.SKILLS, "t0k3n")
    budget = [i for i in plan.interference if i.startswith("planning's budget")]
    assert len(budget) == 1
    assert budget[0].endswith("command line(s) past the 4000-line cap"), budget
    assert any("over the 6-script cap" in i for i in plan.interference)
    documented = [s for s in plan.core if s.name.endswith("(documented)")]
    assert documented and all("/scripts/s" in s.argv[1] for s in documented)


def test_a_documented_one_liner_is_planned_as_written(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text(
        "```\n$ python3 -c \"print('x')\" | tee out.txt\nnode -e 'console.log(1)'\n```\n"
        "Run `python -m tool --fast` here; `python3 notes.md` is no one-liner.\n"
    )
    plan = build_plan(tmp_path, Track.SKILLS, "t0k3n")
    assert [(s.argv, s.cwd) for s in plan.core] == [
        ((PYTHON, "-c", "print('x')"), "/workspaces/skill"),
        (("/usr/bin/node", "-e", "console.log(1)"), "/workspaces/skill"),
        ((PYTHON, "-m", "tool", "--fast"), "/workspaces/skill"),
    ]
    assert plan.interference == ()


def test_a_lone_wheel_is_installed_with_pip(tmp_path: Path) -> None:
    (tmp_path / "tzkit-1.0-py3-none-any.whl").write_bytes(b"PK")
    _, install, _ = build_plan(tmp_path, Track.PACKAGES, "t0k3n").core
    assert install.argv[-1] == "/workspaces/.cache-t0k3n/src/tzkit-1.0-py3-none-any.whl"


def test_what_a_tool_declares_as_an_example_is_tried_first() -> None:
    schema = {
        "properties": {
            "expression": {"type": "string"},
            "unit": {"type": "string", "examples": ["km"], "enum": ["m", "km"]},
        }
    }
    tried = argument_variations(schema, "c", description="Evaluate such as 2 * (3 + 4).")
    assert [label for label, _ in tried[1:]] == ['unit="km"']  # no example for two strings
    sole = {"properties": {"expression": {"type": "string"}}}
    base, example = argument_variations(sole, "c", description="Evaluate such as 2 * (3 + 4).")
    assert example == ('expression="2 * (3 + 4)"', {"expression": "2 * (3 + 4)"})
    assert base == ("", {"expression": "c"})


@pytest.mark.parametrize(
    ("files", "track", "place"),
    [
        ({"package.json": '{"name": "@acme/left-pad"}'}, Track.PACKAGES, "left-pad"),
        ({"pyproject.toml": '[project]\nname = "tzkit"\n'}, Track.PACKAGES, "tzkit"),
        ({"SKILL.md": "---\nname: notes-sync\n---\n"}, Track.SKILLS, "notes-sync"),
        ({"package.json": '{"name": "weather-mcp"}'}, Track.MCP_SERVERS, "weather-mcp"),
        ({"mcp.json": "{}"}, Track.MCP_SERVERS, "mcp-server"),
        # a name that would leave the workspace, or take what else it holds, is not taken
        ({"package.json": '{"name": ".."}'}, Track.PACKAGES, "lib"),
        ({"package.json": '{"name": "node_modules"}'}, Track.MCP_SERVERS, "mcp-server"),
        ({"SKILL.md": "---\nname: project\n---\n"}, Track.SKILLS, "skill"),
        ({"SKILL.md": "---\nname: a/../../etc\n---\n"}, Track.SKILLS, "etc"),  # its last part
    ],
)
def test_the_artifact_is_a_clone_named_as_it_names_itself(
    tmp_path: Path, files: dict[str, str], track: Track, place: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert artifact_place(tmp_path, track) == f"/workspaces/{place}"
    assert build_plan(tmp_path, track, "t0k3n").artifact == f"/workspaces/{place}"
