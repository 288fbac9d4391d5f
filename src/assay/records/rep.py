"""The rep record: one line of JSON per rep of one agent on one task.

It is the unit `assay score` reads and the round store emits, so any score can
be recomputed offline from what was recorded. Fields:

| field | type | meaning |
| --- | --- | --- |
| agent | str | agent id (hex SHA-256 of its code) |
| track | skills, mcp_servers, packages, repositories | |
| task | str | task id within the track |
| label | malicious, safe | the task's ground-truth label |
| rep | int >= 0 | repetition index |
| status | completed, failed | whether the rep cleared every gate |
| reason | str or null | why a failed rep failed (required when failed) |
| verdict | ALLOW, WARN, BLOCK or null | the rep's decision (required: completed behavioural rep) |
| findings | list of objects | the agent's findings (behavioural) |
| expected_findings | list of objects | the label's expected findings (behavioural) |
| vulnerabilities | list of objects | the agent's reported vulnerabilities (repositories) |
| planted | list of objects | the label's planted vulnerabilities (repositories) |
| detail | str | optional: what a failed rep's reason means here (schema path, traceback line...) |
| cpu_s | float >= 0 | optional: CPU seconds the rep's process tree used |
| inference | object or null | optional: what the rep spent through the inference proxy |

Records are decoded with msgspec rather than pydantic: a full round at scale
is a million records, and msgspec validates one in about a microsecond where a
pydantic model takes over fifteen.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import Track
from assay.records.outcome import RunOutcome
from assay.records.plan import PlannedTask
from assay.records.usage import InferenceUsage

# A record line longer than this is refused rather than parsed: one rep's
# report is capped at 1 MiB, and the label's truth travels beside it.
MAX_LINE_BYTES = 4 << 20


class RecordError(ValueError):
    """A bad record; the message names the line (kept in `line` when known)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class RepRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    agent: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    track: Track
    task: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    label: Literal["malicious", "safe"]
    rep: Annotated[int, msgspec.Meta(ge=0)]
    status: Literal["completed", "failed"]
    reason: str | None = None
    verdict: Literal["ALLOW", "WARN", "BLOCK"] | None = None
    findings: tuple[FindingItem, ...] = ()
    expected_findings: tuple[FindingItem, ...] = ()
    vulnerabilities: tuple[VulnerabilityItem, ...] = ()
    planted: tuple[VulnerabilityItem, ...] = ()
    detail: Annotated[str, msgspec.Meta(max_length=4096)] = ""
    cpu_s: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    inference: InferenceUsage | None = None  # without its exchanges

    def __post_init__(self) -> None:
        if self.status == "failed" and not self.reason:
            raise ValueError("a failed rep needs a reason")
        if self.status == "completed" and self.track.behavioural and self.verdict is None:
            raise ValueError("a completed behavioural rep needs a verdict")

    @property
    def completed(self) -> bool:
        return self.status == "completed"


# Not strict: a line number or count written as a string is read as the number it spells.
_DECODER = msgspec.json.Decoder(RepRecord, strict=False)


def parse_line(line: bytes | str, number: int) -> RepRecord:
    if len(line) > MAX_LINE_BYTES:
        raise RecordError(f"line {number}: record longer than {MAX_LINE_BYTES} bytes", number)
    try:
        return _DECODER.decode(line)
    except (msgspec.DecodeError, ValueError) as exc:
        raise RecordError(f"line {number}: {exc}", number) from None


def parse_lines(lines: Iterable[bytes | str]) -> Iterator[RepRecord]:
    """Records from JSON lines; blank lines are skipped, the first bad one raises."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield parse_line(line, number)


@contextmanager
def bulk() -> Iterator[None]:
    """Build millions of small acyclic objects without the cycle collector.

    Every few hundred allocations the collector would otherwise walk the whole
    growing heap of records and views: half the time of scoring a million
    records went there. Nothing built here forms a cycle, so nothing leaks.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_records(path: Path) -> list[RepRecord]:
    try:
        with bulk(), path.open("rb") as handle:
            return list(parse_lines(handle))
    except OSError as exc:
        raise RecordError(f"cannot read: {exc.strerror}") from None


def to_record(outcome: RunOutcome, truth: PlannedTask) -> RepRecord:
    """A stored outcome as the rep record every score is computed from."""
    report = outcome.report if outcome.completed else None
    findings: tuple[FindingItem, ...] = ()
    vulnerabilities: tuple[VulnerabilityItem, ...] = ()
    if report is not None:
        findings = tuple(FindingItem.of(f.model_dump(mode="json")) for f in report.findings)
        vulnerabilities = tuple(
            VulnerabilityItem.of(v.model_dump(mode="json"))
            for v in report.evidence.vulnerabilities or ()
        )
    return RepRecord(
        agent=outcome.agent_hash,
        track=outcome.track,
        task=outcome.task_id,
        label=truth.label,  # type: ignore[arg-type]
        rep=outcome.rep,
        status=outcome.status.value,
        reason=outcome.reason.value if outcome.reason else None,
        verdict=outcome.decision,  # type: ignore[arg-type]
        findings=findings,
        expected_findings=truth.expected_findings,
        vulnerabilities=vulnerabilities,
        planted=truth.planted,
        detail=outcome.detail[:4096],
        cpu_s=max(0.0, outcome.cpu_s),
        inference=outcome.inference.summary() if outcome.inference else None,
    )
