"""The three gates of DESIGN §5 applied to what the sandbox observed.

Order: budget (limits), process exit, report present, liveness (behavioural
tracks), well-formed report. The first gate that fails names the reason, and
its detail says what a user can act on: the budget against what was used, the
last line of the agent's traceback, the schema path, the missing probe part.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.mechanism.spec import Track
from assay.records.outcome import FailureReason, ProbeObservation
from assay.runner import shim
from assay.runner.probe import Probe, observe_probe
from assay.sandbox.interface import CopyStatus, LimitHit, Observation, ResourceLimits
from assay.schema.report import AgentReport, ReportError, parse_report
from assay.schema.visible import visible

_LIMIT_REASONS = {
    LimitHit.CPU_BUDGET: FailureReason.CPU_BUDGET,
    LimitHit.WALL_BACKSTOP: FailureReason.WALL_BACKSTOP,
    LimitHit.MEMORY: FailureReason.MEMORY,
    LimitHit.PIDS: FailureReason.PIDS,
    LimitHit.TRACE_CAP: FailureReason.TRACE_CAP,
}
_EXIT_REASONS = {
    shim.EXIT_AGENT_INVALID: FailureReason.AGENT_INVALID,
    shim.EXIT_MALFORMED: FailureReason.MALFORMED_REPORT,
}


@dataclass(frozen=True)
class Judgement:
    reason: FailureReason | None
    detail: str = ""
    report: AgentReport | None = None
    probe: ProbeObservation | None = None


_DETAIL_CAP = 300
_SHIM_PREFIX = "assay-shim: "
_PROBE_HOW = (
    "write probe.file_content to probe.file_path, resolve probe.dns_host and run a "
    "process whose argv carries probe.process_echo (docs/agents.md, 'The probe')"
)


def judge(
    observation: Observation,
    *,
    track: Track,
    probe: Probe | None,
    limits: ResourceLimits,
    max_items: int,
) -> Judgement:
    """The rep's reason to fail, if any, and its accepted report (at most `max_items`
    findings and vulnerabilities kept)."""
    probe_seen = (
        observe_probe(probe, observation.copied_file(probe.file_name), observation.trace)
        if probe is not None
        else None
    )

    def fail(reason: FailureReason, detail: str) -> Judgement:
        return Judgement(reason, detail, None, probe_seen)

    if observation.limit_hit is not None:
        hit = observation.limit_hit
        return fail(_LIMIT_REASONS[hit], _limit_detail(hit, observation, limits))
    if observation.exit_code != 0:
        reason = _EXIT_REASONS.get(observation.exit_code or 0, FailureReason.CRASH)
        return fail(reason, _exit_detail(observation))
    if observation.result.total_bytes == 0:
        return fail(FailureReason.NO_REPORT, "exited without writing a report")
    if probe_seen is not None and not probe_seen.passed:
        return fail(FailureReason.PROBE_MISSING, f"{_missing(probe_seen)}; {_PROBE_HOW}")
    if observation.result.truncated:
        size = observation.result.total_bytes
        return fail(
            FailureReason.MALFORMED_REPORT,
            f"report of {size} bytes exceeds the {limits.result_bytes}-byte cap",
        )
    try:
        report = parse_report(
            observation.result.data, track, max_bytes=limits.result_bytes, max_items=max_items
        )
    except (ReportError, ValueError, RecursionError) as exc:
        # The report's bytes are the agent's: whatever they provoke is its failure.
        return fail(FailureReason.MALFORMED_REPORT, f"report {exc}"[:2000])
    return Judgement(None, "", report, probe_seen)


def _limit_detail(hit: LimitHit, seen: Observation, limits: ResourceLimits) -> str:
    if hit is LimitHit.CPU_BUDGET:
        return (
            f"used {seen.cpu_s:.2f} s of CPU (tracing its calls {seen.tracer_cpu_s:.2f} s of "
            f"it); the budget is {limits.cpu_budget_s:g} s"
        )
    if hit is LimitHit.WALL_BACKSTOP:
        return _backstop_detail(seen, limits)
    if hit is LimitHit.MEMORY:
        return f"killed at the memory limit of {limits.memory_bytes >> 20} MiB"
    if hit is LimitHit.TRACE_CAP:
        return (
            f"its traced calls passed the tracer's cap of {limits.trace_bytes >> 20} MiB "
            f"or {limits.trace_files} processes"
        )
    return f"hit the limit of {limits.pids} processes"


def _backstop_detail(seen: Observation, limits: ResourceLimits) -> str:
    """Why the wall clock, not the CPU budget, stopped the rep: an author whose agent
    computes expects `cpu_budget`, and a busy host can stretch its wall time instead."""
    share = seen.cpu_s / seen.wall_s if seen.wall_s > 0 else 0.0
    why = (
        "it was waiting (sleeping, or blocked on a file, a process or the network)"
        if share < 0.05
        else f"it ran on a CPU only {share:.0%} of that time: it waited, or the host was "
        "busy and gave it little of a core"
    )
    return (
        f"stopped by the wall-clock backstop, not the CPU budget: {seen.wall_s:.1f} s of wall "
        f"time passed (backstop {limits.wall_backstop_s:g} s) while it used {seen.cpu_s:.2f} s "
        f"of its {limits.cpu_budget_s:g} s CPU budget; {why}"
    )


def _exit_detail(seen: Observation) -> str:
    """The shim's own message (the exception and where in the agent's file it was raised),
    or the exit code and the last line the process wrote."""
    lines = [
        line.strip()
        for line in seen.stderr.data.decode("utf-8", "replace").splitlines()
        if line.strip()
    ]
    shim_at = max((i for i, line in enumerate(lines) if line.startswith(_SHIM_PREFIX)), default=-1)
    if shim_at < 0:
        last = f": {lines[-1]}" if lines else ""
        return _printable(f"exit code {seen.exit_code}{last}")
    # The shim's line says it all: what was raised, in the author's file and line.
    return _printable(lines[shim_at].removeprefix(_SHIM_PREFIX))


def _printable(text: str) -> str:
    # Details reach terminals and reports: hidden characters made visible, bounded length.
    clean = visible(text)
    return clean if len(clean) <= _DETAIL_CAP else clean[: _DETAIL_CAP - 1] + "…"


def _missing(seen: ProbeObservation) -> str:
    parts = []
    if not seen.file_matches:
        state = "content differs" if seen.file_status is CopyStatus.OK else seen.file_status.value
        parts.append(f"probe file: {state}")
    if not seen.dns_seen:
        parts.append("no DNS query for the probe host")
    if not seen.echo_seen:
        parts.append("no process carrying the echo token")
    return "; ".join(parts)
