"""The stored result of one rep, with its JSON round trip (`records.codec`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import msgspec

from assay.mechanism.spec import Track
from assay.records import codec
from assay.records.usage import Body, InferenceUsage
from assay.sandbox.interface import CopyStatus, TraceSummary
from assay.schema.report import AgentReport


class RunStatus(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"


class FailureReason(StrEnum):
    """Why a rep failed. Closed set; every member is the agent's fault (DESIGN §5)."""

    CPU_BUDGET = "cpu_budget"  # the process tree used more CPU than the track budget
    WALL_BACKSTOP = "wall_backstop"  # ran past the wall-clock backstop (3 x budget)
    MEMORY = "memory"  # killed at the memory limit (no swap)
    PIDS = "pids"  # hit the process-count limit
    TRACE_CAP = "trace_cap"  # made the validator's tracer write more than its cap
    CRASH = "crash"  # raised, was killed by a signal, or exited non-zero
    NO_REPORT = "no_report"  # exited cleanly without writing a report
    MALFORMED_REPORT = "malformed_report"  # not JSON, too big, or fails the track's schema
    PROBE_MISSING = "probe_missing"  # the validator did not observe the liveness probe
    AGENT_INVALID = "agent_invalid"  # oversized, not Python, or no callable entrypoint
    ROUND_CAP = "round_cap"  # the agent's round wall cap was spent before this rep


class SandboxIdentity(msgspec.Struct, frozen=True, kw_only=True):
    backend: str
    digest: str
    sandboxed: bool


@dataclass(frozen=True)
class ProbeObservation:
    """What the validator itself saw of the probe; the agent's claims play no part."""

    file_status: CopyStatus
    file_matches: bool
    dns_seen: bool
    echo_seen: bool

    @property
    def passed(self) -> bool:
        return self.file_matches and self.dns_seen and self.echo_seen


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True):
    track: Track
    task_id: str
    rep: int
    agent_hash: str
    nonce: str
    status: RunStatus
    reason: FailureReason | None = None
    detail: str = ""
    report: AgentReport | None = None
    exit_code: int | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    peak_memory_bytes: int = 0
    probe: ProbeObservation | None = None
    trace: TraceSummary = msgspec.field(default_factory=TraceSummary)
    stdout_bytes: int = 0
    stderr_tail: str = ""
    sandbox: SandboxIdentity
    inference: InferenceUsage | None = None  # None: the round had no upstream model
    # The bodies behind `inference.exchanges`' digests, on their way to the store, which
    # keeps them apart from the outcome (`Store.inference_bodies`).
    transcript: tuple[Body, ...] = ()

    @property
    def completed(self) -> bool:
        return self.status is RunStatus.COMPLETED

    @property
    def charged_wall_s(self) -> float:
        """Wall seconds counted against the agent's round cap: the time its backstop
        forgave for waiting on the model is forgiven there too."""
        extension = self.inference.wall_extension_s if self.inference else 0.0
        return max(0.0, self.wall_s - extension)

    @property
    def decision(self) -> str | None:
        """The verdict a completed rep votes for (None for a failed rep)."""
        return self.report.verdict.decision.value if self.completed and self.report else None

    def to_json(self) -> str:
        return codec.encode(self).decode()

    @classmethod
    def from_json(cls, text: str | bytes) -> RunOutcome:
        return codec.decode(text, cls)
