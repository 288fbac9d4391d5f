"""Fixtures for running real agents through the real sandbox with short budgets."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from assay.mechanism.spec import MechanismSpec, Track, parse_spec
from assay.records.agent import Agent
from assay.records.observed import Observed
from assay.records.outcome import RunOutcome
from assay.runner.rep import RepTask, run_rep
from assay.sandbox import default_backend
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.bwrap.cgroups import CGROUP_ROOT
from assay.sandbox.owners import owner_tag
from assay.schema.mechanism_file import pinned_bytes

SECRET = b"test-validator-secret-0123456789"


def short_spec() -> MechanismSpec:
    """The pinned spec with 1 s CPU budgets and small memory/pid limits (tests only)."""
    raw = pinned_bytes().decode()
    raw = re.sub(r"cpu_budget_s = [0-9.]+", "cpu_budget_s = 1.0", raw)
    raw = re.sub(r"memory_bytes = \d+", "memory_bytes = 268435456", raw)
    raw = re.sub(r"pids = \d+", "pids = 64", raw)
    return parse_spec(raw.encode())


PROBE_PRELUDE = """
import os, socket, subprocess, sys, json

def thread_probe(context, file=True, dns=True, echo=True):
    p = context["probe"]
    if file:
        with open(p["file_path"], "w") as f:
            f.write(p["file_content"])
    if dns:
        try:
            socket.getaddrinfo(p["dns_host"], 80)
        except OSError:
            pass
    if echo:
        subprocess.run(["echo", p["process_echo"]], capture_output=True)

def report(decision="ALLOW", **extra):
    r = {
        "verdict": {"decision": decision, "risk_score": 10, "confidence": 0.5, "summary": "s"},
        "evidence": {
            "action_plane": {"capabilities": [{"capability": "READ_FILE"}]},
            "context_plane": {"injected_instructions": []},
        },
        "findings": [],
    }
    r.update(extra)
    return r
"""


def agent_source(body: str) -> bytes:
    """An agent: the probe/report helpers, then `body` (which defines agent_main)."""
    return (PROBE_PRELUDE + "\n" + textwrap.dedent(body)).encode()


@pytest.fixture(scope="session")
def backend() -> BwrapBackend:
    # The process's one backend, as a round's: a backend's directory and cgroups are per
    # process, and a release by any other backend here would pull them from under it.
    b = default_backend()
    assert isinstance(b, BwrapBackend)
    b.sweep_stale()
    return b


@pytest.fixture(scope="session")
def spec() -> MechanismSpec:
    return short_spec()


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    art = tmp_path / "artifact"
    art.mkdir()
    (art / "SKILL.md").write_text("# a skill\n")
    return art


def _leftovers() -> list[str]:
    owner = owner_tag()
    found = [str(p) for p in CGROUP_ROOT.glob(f"*/assay/{owner}/run-*")]
    mounts = Path("/proc/self/mountinfo").read_text()
    found += [line for line in mounts.splitlines() if f"/{owner}/run-" in line]
    return found


@pytest.fixture(autouse=True)
def host_untouched(backend: BwrapBackend) -> Iterator[None]:
    """After every test (and the backend's release): nothing of ours is left behind."""
    yield
    backend.release()
    assert _leftovers() == []


@pytest.fixture
def run_agent(
    backend: BwrapBackend, spec: MechanismSpec, artifact: Path
) -> Callable[..., RunOutcome]:
    def run(
        body: str | bytes,
        track: Track = Track.SKILLS,
        entrypoint: str = "agent_main",
        task_id: str = "task-1",
        artifact_dir: Path = artifact,
        observed: Observed | None = None,
    ) -> RunOutcome:
        code = body if isinstance(body, bytes) else agent_source(body)
        agent = Agent(code, entrypoint)
        task = RepTask(agent, track, task_id, artifact_dir, 0, "seed", observed=observed)
        outcome = run_rep(task, backend=backend, spec=spec, secret=SECRET)
        assert RunOutcome.from_json(outcome.to_json()) == outcome
        return outcome

    return run
