"""Planning and the harness's pure parts, without a sandbox (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path

from assay.detonate.harness import merge_env
from assay.detonate.steps import PYTHON, build_plan
from assay.mechanism.spec import Track


def test_a_step_env_adds_and_extends_but_never_replaces() -> None:
    base = {"PATH": "/usr/bin", "HOME": "/home/u", "NODE_OPTIONS": "--require /h.js"}
    extra = {
        "PATH": "/opt/x",
        "HOME": "/tmp",
        "NODE_OPTIONS": "",
        "PYTHONNOUSERSITE": "1",
        "FAKETIME_DONT_RESET": "1",
        "LD_PRELOAD": "/x.so",
        "NOTES_MODE": "sync",
    }
    assert merge_env(base, extra) == {
        "PATH": "/usr/bin:/opt/x",
        "HOME": "/home/u",
        "NODE_OPTIONS": "--require /h.js",
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
