"""Each baseline agent, called in-process on every bundled task, returns a well-formed report."""

from __future__ import annotations

import importlib.util
import json
import socket
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from assay.corpus.interface import Label, Task
from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import TRACKS, Track
from assay.runner.context import local_context

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ("allow_all", "block_all", "coin_flip", "keyword")
TASKS = [t for track in TRACKS for t in NativeCorpus(ROOT / "corpus").tasks(track)]
EXTRA_KEYS = {Track.MCP_SERVERS: {"mcp_surface"}, Track.PACKAGES: {"lifecycle", "supply_chain"}}


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"agent_{name}", ROOT / "agents" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=AGENTS)
def agent(request: pytest.FixtureRequest) -> Callable[[dict[str, Any]], dict[str, Any]]:
    main: Callable[[dict[str, Any]], dict[str, Any]] = _load(request.param).agent_main
    return main


@pytest.fixture(autouse=True)
def no_real_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    # The probe host is fictional; keep the test off the network (the sandbox traces it).
    def refuse(*args: object, **kwargs: object) -> list[Any]:
        raise OSError("no network in tests")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def _context(task: Task, tmp_path: Path) -> dict[str, object]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return local_context(task.track, task.artifact_dir, workspace)


def _check_report(task: Task, report: dict[str, Any]) -> None:
    json.dumps(report)  # must be JSON-able
    verdict = report["verdict"]
    assert verdict["decision"] in {"ALLOW", "WARN", "BLOCK"}
    assert 0 <= verdict["risk_score"] <= 100 and 0 <= verdict["confidence"] <= 1
    assert isinstance(verdict["summary"], str)
    assert isinstance(report["findings"], list)
    evidence = report["evidence"]
    if task.track is Track.REPOSITORIES:
        assert evidence["audit"]["files_analysed"] >= 1
        assert isinstance(evidence["audit"]["lines_analysed"], int)
        for vuln in evidence["vulnerabilities"]:
            assert {"file", "line", "cwe", "title"} <= set(vuln)
        return
    assert isinstance(evidence["action_plane"]["capabilities"], list)
    assert isinstance(evidence["context_plane"]["injected_instructions"], list)
    assert EXTRA_KEYS.get(task.track, set()) <= set(evidence)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: f"{t.track.value}/{t.task_id}")
def test_report_well_formed_and_probe_threaded(
    agent: Callable[[dict[str, Any]], dict[str, Any]], task: Task, tmp_path: Path
) -> None:
    context = _context(task, tmp_path)
    report = agent(context)
    _check_report(task, report)
    probe = context["probe"]
    if task.track.behavioural:
        assert isinstance(probe, dict)
        assert Path(probe["file_path"]).read_text() == probe["file_content"]
    assert agent(_context(task, tmp_path)) == report  # deterministic across reps


def test_constant_agents_are_constant(tmp_path: Path) -> None:
    for name, decision in (("allow_all", "ALLOW"), ("block_all", "BLOCK")):
        main = _load(name).agent_main
        assert {main(_context(t, tmp_path))["verdict"]["decision"] for t in TASKS} == {decision}


def test_coin_flip_lands_both_ways_and_ignores_the_nonce(tmp_path: Path) -> None:
    main = _load("coin_flip").agent_main
    decisions = {main(_context(t, tmp_path))["verdict"]["decision"] for t in TASKS}
    assert decisions == {"ALLOW", "BLOCK"}
    context = _context(TASKS[0], tmp_path)
    first = main(context)
    assert main({**context, "nonce": "ff" * 16}) == first


def test_keyword_finds_planted_repository_sinks(tmp_path: Path) -> None:
    main = _load("keyword").agent_main
    repos = [t for t in TASKS if t.track is Track.REPOSITORIES and t.label is Label.MALICIOUS]
    matched = 0
    for task in repos:
        reported = main(_context(task, tmp_path))["evidence"]["vulnerabilities"]
        found = {(v["file"], v["line"]) for v in reported}
        matched += sum((v.file, v.line) in found for v in task.vulnerabilities)
    assert matched >= len(repos)  # naive, but not blind
