"""One rep of one agent on one task: build the context, run it sealed, judge it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from assay.inference.interface import InferenceService, MeteredSession
from assay.mechanism.spec import MechanismSpec, Track
from assay.records.agent import Agent
from assay.records.observed import Observed
from assay.records.outcome import FailureReason, RunOutcome, RunStatus, SandboxIdentity
from assay.runner.context import build_context
from assay.runner.gates import Judgement, judge
from assay.runner.probe import Probe, derive_nonce
from assay.sandbox.interface import (
    InputFile,
    Observation,
    ResourceLimits,
    SandboxBackend,
    SealedRequest,
    TraceSet,
)
from assay.sandbox.script import python_script

_STDERR_TAIL = 4096
_PROBE_FILE_CAP = 64 * 1024
# Where the shim relays the inference proxy inside the sandbox (its own network namespace,
# so every sandbox may use the same port); Phylax's proxy port, for familiarity.
INFERENCE_PORT = 8900
INFERENCE_API = f"http://127.0.0.1:{INFERENCE_PORT}"


@dataclass(frozen=True)
class RepTask:
    """Which rep to run: the agent, the task (track, id, artifact) and the rep's place."""

    agent: Agent
    track: Track
    task_id: str
    artifact_dir: Path
    rep: int
    round_seed: str
    observed: Observed | None = None
    model: str | None = None  # the model the round's upstream serves this agent


def shim_source() -> bytes:
    return resources.files("assay.runner").joinpath("shim.py").read_bytes()


def limits_for(spec: MechanismSpec, track: Track) -> ResourceLimits:
    box = spec.sandbox
    return ResourceLimits(
        cpu_budget_s=spec.track(track).cpu_budget_s,
        wall_backstop_s=spec.wall_backstop_s(track),
        memory_bytes=box.memory_bytes,
        pids=box.pids,
        workspace_bytes=box.workspace_bytes,
        result_bytes=box.report_bytes,
    )


def shim_config(agent: Agent, spec: MechanismSpec, backend: SandboxBackend) -> dict[str, object]:
    """What the shim reads from shim.json."""
    return {
        "entrypoint": agent.entrypoint,
        "agent_filename": agent.filename,
        "agent_code_bytes": spec.sandbox.agent_code_bytes,
        "report_bytes": spec.sandbox.report_bytes,
        "python_path": list(backend.python_path),
    }


def sealed_request(
    task: RepTask,
    context: dict[str, object],
    probe: Probe | None,
    spec: MechanismSpec,
    backend: SandboxBackend,
    session: MeteredSession | None = None,
) -> SealedRequest:
    config = shim_config(task.agent, spec, backend)
    if session is not None:
        relay = {"socket": session.socket_name, "port": INFERENCE_PORT, "slots": session.slots}
        config["inference_relay"] = relay
    run = python_script(
        backend,
        InputFile("shim.py", shim_source()),
        {"shim.json": config, "context.json": context},
        modules=(InputFile("agent.py", task.agent.code),),
    )
    return SealedRequest(
        service=session,
        argv=run.argv,
        limits=limits_for(spec, task.track),
        inputs=run.inputs,
        artifact_dir=str(task.artifact_dir),
        copy_out=(probe.file_name,) if probe else (),
        copy_out_bytes=_PROBE_FILE_CAP,
        # The gates read only the probe's exec and DNS query from the trace.
        trace=TraceSet.LIVENESS,
    )


def _inference_context(session: MeteredSession | None, nonce: str) -> dict[str, str]:
    """`context.inference`: Phylax's shape, where the agent posts to
    f"{api}/v1/chat/completions" with the nonce as its key; empty without a model."""
    if session is None:
        return {}
    return {
        "api": INFERENCE_API,
        "api_key": nonce,
        "provider": session.provider,
        "model": session.model,
    }


def run_rep(
    task: RepTask,
    *,
    backend: SandboxBackend,
    spec: MechanismSpec,
    secret: bytes,
    inference: InferenceService | None = None,
) -> RunOutcome:
    """Run one rep sealed and judge it. `InfrastructureError` propagates (abstain).

    With an `inference` service (the round serves a model), the rep gets its own
    metered session from it."""
    nonce = derive_nonce(secret, task.round_seed, task.agent.agent_hash, task.task_id, task.rep)
    identity = SandboxIdentity(
        backend=backend.name, digest=backend.digest, sandboxed=backend.sandboxed
    )
    if len(task.agent.code) > spec.sandbox.agent_code_bytes:
        detail = f"agent file exceeds {spec.sandbox.agent_code_bytes} bytes"
        return unrun(task, nonce, identity, FailureReason.AGENT_INVALID, detail)
    probe = Probe.from_nonce(nonce) if task.track.behavioural else None
    budget = spec.track(task.track).inference
    session = inference.session(nonce=nonce, model=task.model, budget=budget) if inference else None
    context = build_context(
        track=task.track.value,
        nonce=nonce,
        probe=probe,
        observed=task.observed,
        backend=backend,
        inference=_inference_context(session, nonce),
    )
    request = sealed_request(task, context, probe, spec, backend, session)
    try:
        observation = backend.run(request)
    finally:
        usage = session.close() if session else None
    limits = request.limits
    if usage is not None:  # the backstop the run was actually held to
        limits = replace(limits, wall_backstop_s=limits.wall_backstop_s + usage.wall_extension_s)
    judgement = judge(
        observation,
        track=task.track,
        probe=probe,
        limits=limits,
        max_items=spec.max_items_per_report,
    )
    outcome = _judged(task, nonce, identity, observation, judgement)
    if session is None:
        return outcome
    return msgspec.structs.replace(outcome, inference=usage, transcript=session.transcript())


def unrun(
    task: RepTask, nonce: str, sandbox: SandboxIdentity, reason: FailureReason, detail: str
) -> RunOutcome:
    """A rep that failed without running: its reason, and nothing observed."""
    return _outcome(task, nonce, sandbox, status=RunStatus.FAILED, reason=reason, detail=detail)


def _judged(
    task: RepTask,
    nonce: str,
    sandbox: SandboxIdentity,
    observation: Observation,
    judgement: Judgement,
) -> RunOutcome:
    return _outcome(
        task,
        nonce,
        sandbox,
        status=RunStatus.FAILED if judgement.reason else RunStatus.COMPLETED,
        reason=judgement.reason,
        detail=judgement.detail,
        report=judgement.report,
        exit_code=observation.exit_code,
        cpu_s=observation.cpu_s,
        wall_s=observation.wall_s,
        peak_memory_bytes=observation.peak_memory_bytes,
        probe=judgement.probe,
        trace=observation.trace,
        stdout_bytes=observation.stdout.total_bytes,
        stderr_tail=observation.stderr.data[-_STDERR_TAIL:].decode("utf-8", "replace"),
    )


def _outcome(task: RepTask, nonce: str, sandbox: SandboxIdentity, **result: Any) -> RunOutcome:
    return RunOutcome(
        track=task.track,
        task_id=task.task_id,
        rep=task.rep,
        agent_hash=task.agent.agent_hash,
        nonce=nonce,
        sandbox=sandbox,
        **result,
    )
