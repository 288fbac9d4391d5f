"""Helpers and fixtures of the inference tests (a uniquely named module: test files import it)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_upstream import KEY, FakeUpstream, serve

from assay.inference.config import Upstream
from assay.inference.proxy import MeteredProxy
from assay.mechanism.spec import MechanismSpec, Track, parse_spec
from assay.records.agent import Agent
from assay.records.outcome import RunOutcome
from assay.runner.rep import RepTask, run_rep
from assay.sandbox import default_backend
from assay.sandbox.bwrap import BwrapBackend
from assay.schema.inference import InferenceConfig
from assay.schema.mechanism_file import pinned_bytes

SECRET = b"test-validator-secret-0123456789"

# An agent that asks the model through `context.inference` exactly as a Phylax agent
# does (urllib, the nonce as bearer and as X-Phylax-Nonce) and reports what came back.
MODEL_PRELUDE = """
import json, os, socket, subprocess, urllib.error, urllib.request

def ask(context, content="is this skill malicious?", path="/v1/chat/completions", key=None,
        timeout=60, extra=None):
    inference = context["inference"]
    body = {"model": "whatever-the-agent-wants", "messages": [{"role": "user", "content": content}]}
    body.update(extra or {})
    request = urllib.request.Request(
        inference["api"] + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + (key if key is not None else inference["api_key"]),
            "X-Phylax-Nonce": key if key is not None else context["nonce"],
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")

def probe(context):
    p = context["probe"]
    with open(p["file_path"], "w") as f:
        f.write(p["file_content"])
    try:
        socket.getaddrinfo(p["dns_host"], 80)
    except OSError:
        pass
    subprocess.run(["echo", p["process_echo"]], capture_output=True)

def report(summary, decision="BLOCK"):
    return {
        "verdict": {"decision": decision, "risk_score": 80, "summary": summary[:4000]},
        "evidence": {
            "action_plane": {"capabilities": []},
            "context_plane": {"injected_instructions": []},
        },
        "findings": [],
    }
"""


def model_agent(body: str) -> bytes:
    return (MODEL_PRELUDE + "\n" + textwrap.dedent(body)).encode()


def short_spec(extension_s: float = 20.0, requests: int = 3) -> MechanismSpec:
    """1 s CPU budgets (3 s wall backstop), a small inference budget, small limits."""
    raw = pinned_bytes().decode()
    raw = re.sub(r"cpu_budget_s = [0-9.]+", "cpu_budget_s = 1.0", raw)
    raw = re.sub(r"inference_requests = \d+", f"inference_requests = {requests}", raw)
    raw = re.sub(r"inference_tokens = \d+", "inference_tokens = 1000", raw)
    raw = re.sub(
        r"inference_wall_extension_s = [0-9.]+", f"inference_wall_extension_s = {extension_s}", raw
    )
    raw = re.sub(r"memory_bytes = \d+", "memory_bytes = 268435456", raw)
    raw = re.sub(r"pids = \d+", "pids = 64", raw)
    return parse_spec(raw.encode())


@pytest.fixture(scope="session")
def backend() -> BwrapBackend:
    # The process's one backend, as a round's: a backend's directory and cgroups are per
    # process, and a release by any other backend here would pull them from under it.
    b = default_backend()
    assert isinstance(b, BwrapBackend)
    b.sweep_stale()
    return b


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with serve() as fake:
        yield fake


def upstream_config(fake: FakeUpstream, **extra: object) -> InferenceConfig:
    return InferenceConfig.from_table(
        {
            "base_url": fake.base_url,
            "model": "test-model",
            "provider": "loopback",
            "key_env": "ASSAY_TEST_KEY",
            **extra,
        }
    )


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    art = tmp_path / "artifact"
    art.mkdir()
    (art / "SKILL.md").write_text("# a skill\n")
    return art


RunModelAgent = Callable[..., RunOutcome]


@pytest.fixture
def run_model_agent(backend: BwrapBackend, artifact: Path, upstream: FakeUpstream) -> RunModelAgent:
    def run(
        body: str,
        *,
        spec: MechanismSpec | None = None,
        timeout_s: float = 60.0,
        task_id: str = "task-1",
        rep: int = 0,
    ) -> RunOutcome:
        config = upstream_config(upstream, timeout_s=timeout_s)
        task = RepTask(Agent(model_agent(body)), Track.SKILLS, task_id, artifact, rep, "seed")
        outcome = run_rep(
            task,
            backend=backend,
            spec=spec or short_spec(),
            secret=SECRET,
            inference=MeteredProxy(Upstream(config, KEY)),
        )
        assert RunOutcome.from_json(outcome.to_json()) == outcome
        return outcome

    return run
