"""The gates' order and reasons, on synthetic observations (the sandbox is tested elsewhere)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from assay.mechanism.spec import Track
from assay.records.outcome import FailureReason, RunOutcome, RunStatus, SandboxIdentity
from assay.runner import shim
from assay.runner.gates import judge
from assay.runner.probe import Probe
from assay.sandbox.interface import (
    CapturedStream,
    CopiedFile,
    CopyStatus,
    LimitHit,
    Observation,
    ResourceLimits,
    TraceSummary,
)

PROBE = Probe.from_nonce("cd" * 32)
LIMITS = ResourceLimits(
    cpu_budget_s=8.0,
    wall_backstop_s=24.0,
    memory_bytes=2 << 30,
    pids=256,
    workspace_bytes=64 << 20,
    result_bytes=1 << 20,
)
REPORT = {
    "verdict": {"decision": "WARN", "risk_score": 40, "confidence": 0.6},
    "evidence": {
        "action_plane": {"capabilities": []},
        "context_plane": {"injected_instructions": []},
    },
}


def stream(data: bytes = b"") -> CapturedStream:
    return CapturedStream(data, len(data))


GOOD = Observation(
    exit_code=0,
    limit_hit=None,
    cpu_s=0.1,
    wall_s=0.2,
    peak_memory_bytes=1 << 20,
    stdout=stream(),
    stderr=stream(),
    result=stream(json.dumps(REPORT).encode()),
    copied=(CopiedFile(PROBE.file_name, CopyStatus.OK, PROBE.file_content.encode()),),
    trace=TraceSummary(execs=(("echo", PROBE.process_echo),), dns_queries=(PROBE.dns_host,)),
)


def verdict(observation: Observation, track: Track = Track.SKILLS) -> FailureReason | None:
    probe = PROBE if track.behavioural else None
    return judge(observation, track=track, probe=probe, limits=LIMITS, max_items=64).reason


def test_good_observation_passes() -> None:
    judgement = judge(GOOD, track=Track.SKILLS, probe=PROBE, limits=LIMITS, max_items=64)
    assert judgement.reason is None and judgement.report is not None
    assert judgement.probe is not None and judgement.probe.passed


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"limit_hit": LimitHit.CPU_BUDGET, "exit_code": None}, FailureReason.CPU_BUDGET),
        ({"limit_hit": LimitHit.WALL_BACKSTOP, "exit_code": None}, FailureReason.WALL_BACKSTOP),
        ({"limit_hit": LimitHit.MEMORY, "exit_code": None}, FailureReason.MEMORY),
        ({"limit_hit": LimitHit.PIDS, "exit_code": None}, FailureReason.PIDS),
        ({"limit_hit": LimitHit.TRACE_CAP, "exit_code": None}, FailureReason.TRACE_CAP),
        ({"exit_code": 1}, FailureReason.CRASH),
        ({"exit_code": 137}, FailureReason.CRASH),
        ({"exit_code": shim.EXIT_AGENT_INVALID}, FailureReason.AGENT_INVALID),
        ({"exit_code": shim.EXIT_MALFORMED}, FailureReason.MALFORMED_REPORT),
        ({"result": stream()}, FailureReason.NO_REPORT),
        ({"trace": TraceSummary()}, FailureReason.PROBE_MISSING),
        ({"copied": ()}, FailureReason.PROBE_MISSING),
        ({"result": stream(b"{not json")}, FailureReason.MALFORMED_REPORT),
        ({"result": CapturedStream(b"{}", 5 << 20)}, FailureReason.MALFORMED_REPORT),
    ],
)
def test_each_gate_names_its_reason(change: dict[str, object], reason: FailureReason) -> None:
    assert verdict(dataclasses.replace(GOOD, **change)) is reason  # type: ignore[arg-type]


def test_budget_outranks_everything_and_probe_outranks_malformed() -> None:
    broken = dataclasses.replace(GOOD, result=stream(b"[]"), trace=TraceSummary())
    assert verdict(broken) is FailureReason.PROBE_MISSING
    killed = dataclasses.replace(broken, limit_hit=LimitHit.CPU_BUDGET, exit_code=None)
    assert verdict(killed) is FailureReason.CPU_BUDGET


def test_repositories_ignore_the_probe() -> None:
    report = {
        "verdict": REPORT["verdict"],
        "evidence": {"audit": {"files_analysed": 1, "lines_analysed": 2}, "vulnerabilities": []},
    }
    observation = dataclasses.replace(
        GOOD, result=stream(json.dumps(report).encode()), trace=TraceSummary(), copied=()
    )
    assert verdict(observation, Track.REPOSITORIES) is None


def test_outcome_json_round_trip() -> None:
    judgement = judge(GOOD, track=Track.SKILLS, probe=PROBE, limits=LIMITS, max_items=64)
    outcome = RunOutcome(
        track=Track.SKILLS,
        task_id="t",
        rep=1,
        agent_hash="a" * 64,
        nonce="cd" * 32,
        status=RunStatus.COMPLETED,
        report=judgement.report,
        probe=judgement.probe,
        trace=GOOD.trace,
        sandbox=SandboxIdentity(backend="bwrap", digest="d", sandboxed=True),
    )
    assert RunOutcome.from_json(outcome.to_json()) == outcome
    assert outcome.decision == "WARN"


def test_a_backstop_says_the_cpu_budget_was_not_what_stopped_it() -> None:
    """A computing agent on a busy host: CPU used against the budget, and the wall time."""
    busy = dataclasses.replace(
        GOOD, limit_hit=LimitHit.WALL_BACKSTOP, exit_code=None, cpu_s=6.0, wall_s=24.5
    )
    judged = judge(busy, track=Track.SKILLS, probe=PROBE, limits=LIMITS, max_items=64)
    assert judged.reason is FailureReason.WALL_BACKSTOP
    assert judged.detail == (
        "stopped by the wall-clock backstop, not the CPU budget: 24.5 s of wall time passed "
        "(backstop 24 s) while it used 6.00 s of its 8 s CPU budget; it ran on a CPU only 24% "
        "of that time: it waited, or the host was busy and gave it little of a core"
    )
