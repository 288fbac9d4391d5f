"""The three gates of DESIGN §5 applied to what the sandbox observed.

Order: budget (limits), process exit, report present, liveness (behavioural
tracks), well-formed report. The first gate that fails names the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.mechanism.spec import Track
from assay.runner import shim
from assay.runner.outcome import FailureReason
from assay.runner.probe import Probe, ProbeObservation, observe_probe
from assay.sandbox.interface import CopyStatus, LimitHit, Observation
from assay.schema.report import AgentReport, ReportError, parse_report

_LIMIT_REASONS = {
    LimitHit.CPU_BUDGET: FailureReason.CPU_BUDGET,
    LimitHit.WALL_BACKSTOP: FailureReason.WALL_BACKSTOP,
    LimitHit.MEMORY: FailureReason.MEMORY,
    LimitHit.PIDS: FailureReason.PIDS,
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


def judge(
    observation: Observation, *, track: Track, probe: Probe | None, report_bytes: int
) -> Judgement:
    probe_seen = (
        observe_probe(probe, observation.copied_file(probe.file_name), observation.trace)
        if probe is not None
        else None
    )

    def fail(reason: FailureReason, detail: str) -> Judgement:
        return Judgement(reason, detail, None, probe_seen)

    if observation.limit_hit is not None:
        return fail(_LIMIT_REASONS[observation.limit_hit], f"{observation.limit_hit} limit hit")
    if observation.exit_code != 0:
        reason = _EXIT_REASONS.get(observation.exit_code or 0, FailureReason.CRASH)
        return fail(reason, f"exit code {observation.exit_code}")
    if observation.result.total_bytes == 0:
        return fail(FailureReason.NO_REPORT, "exited without writing a report")
    if probe_seen is not None and not probe_seen.passed:
        return fail(FailureReason.PROBE_MISSING, _missing(probe_seen))
    if observation.result.truncated:
        size = observation.result.total_bytes
        return fail(FailureReason.MALFORMED_REPORT, f"report of {size} bytes exceeds the cap")
    try:
        report = parse_report(observation.result.data, track, max_bytes=report_bytes)
    except ReportError as exc:
        return fail(FailureReason.MALFORMED_REPORT, str(exc)[:2000])
    return Judgement(None, "", report, probe_seen)


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
