"""A task's matching in words: the lines every human-readable view prints the same way.

The reasons are the validator's (`records.matching.TaskMatching`, weighed by
`mechanism.explain`); this only lays them out: each expected item with the
reported one matched to it (or the nearest, when missed), then every reported
item that matched nothing, each with its criteria. HTML, Markdown and the
terminal read these lines, so no view words a reason its own way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assay.mechanism.explain import Check, Explanation, Pair
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.records.diagnostics import RepDiagnostic
from assay.records.matching import TaskMatching
from assay.records.observed import EvidenceRecord, Observed
from assay.records.scorecard import RepView

PairState = Literal["matched", "missed", "extra"]
MARKS: dict[PairState, str] = {"matched": "✓", "missed": "✗", "extra": "+"}


@dataclass(frozen=True)
class PairLines:
    state: PairState  # matched or missed expected item, or a reported item matching nothing
    head: str  # the item the line is about
    partner: str  # the other side: matched, nearest, or none
    checks: tuple[str, ...]  # one line per criterion, ✓ or ✗ first

    @property
    def mark(self) -> str:
        return MARKS[self.state]


def describe(item: FindingItem | VulnerabilityItem) -> str:
    """An item in one line: its category or CWE, title and place."""
    where = f"{item.file or ''}:{item.line}" if item.line is not None else item.file
    kind = item.cwe if isinstance(item, VulnerabilityItem) else item.category
    return " · ".join(str(p) for p in (kind, item.title, where) if p) or "(empty)"


def check_line(check: Check) -> str:
    mark = "✓" if check.passed else "✗"
    if check.criterion == "title":  # the words are in the items' own lines
        return f"{mark} title: {check.why}"
    return f"{mark} {check.criterion} {check.reported} vs {check.expected}: {check.why}"


def _noun(why: Explanation, side: Literal["expected", "reported"]) -> str:
    if side == "reported":
        return "reported"
    return "expected" if why.kind == "findings" else "planted"


def pair_lines(matching: TaskMatching) -> list[PairLines]:
    """Every pair of the task's matching, expected items first, as lines."""
    why = matching.explanation
    return [_lines(why, pair) for pair in why.pairs]


def _item(why: Explanation, side: Literal["expected", "reported"], index: int | None) -> str:
    if index is None:
        return ""
    items = why.expected if side == "expected" else why.reported
    return f"{_noun(why, side)} #{index + 1} {describe(items[index])}"


def _lines(why: Explanation, pair: Pair) -> PairLines:
    checks = tuple(check_line(c) for c in pair.checks)
    if pair.subject == "expected":
        head = _item(why, "expected", pair.expected)
        if pair.matched:
            return PairLines(
                "matched", head, "matched by " + _item(why, "reported", pair.reported), checks
            )
        if pair.reported is None:
            return PairLines("missed", head, "missed: nothing reported", checks)
        taken = " (agrees, but matched to another)" if pair.agrees else ""
        nearest = _item(why, "reported", pair.reported)
        return PairLines("missed", head, f"missed; nearest {nearest}{taken}", checks)
    head = _item(why, "reported", pair.reported)
    if pair.expected is None:
        return PairLines("extra", head, why.note or "matched nothing", checks)
    nearest = _item(why, "expected", pair.expected)
    taken = " (agrees, but it is matched to another)" if pair.agrees else ""
    return PairLines("extra", head, f"matched nothing; nearest {nearest}{taken}", checks)


EVIDENCE_SHOWN = 3  # evidence lines per capability in a view; the JSON has every one


@dataclass(frozen=True)
class CapabilityLines:
    """One capability the validator's detonation observed, and what showed it."""

    head: str  # the capability, its group and the profiles showing it
    evidence: tuple[str, ...]  # the first few observations behind it
    more: int  # observations not shown


def evidence_line(evidence: EvidenceRecord) -> str:
    what = evidence.path or evidence.peer or " ".join(evidence.argv)
    said = " · ".join(p for p in (evidence.event, what, evidence.detail) if p)
    return f"{said} ({evidence.profile})"


def detonation_lines(observed: Observed) -> list[CapabilityLines]:
    """The stored detonation (`context.observed`) as every view lists it: each capability
    with its evidence, the artifact's words quoted as data."""
    return [
        CapabilityLines(
            head=f"{c.capability} · {c.group} · seen under {', '.join(c.profiles)}",
            evidence=tuple(evidence_line(e) for e in c.evidence[:EVIDENCE_SHOWN]),
            more=max(0, len(c.evidence) - EVIDENCE_SHOWN),
        )
        for c in observed.capabilities
    ]


def detonation_note(observed: Observed | None) -> str:
    """One line on the detonation as a whole: missing, nothing seen, or disturbed."""
    if observed is None:
        return "not detonated"
    if not observed.complete:
        return "incomplete: " + "; ".join(observed.interference)
    if not observed.capabilities:
        return "nothing observed beyond the baseline"
    count = len(observed.capabilities)
    return f"{count} capabilit{'y' if count == 1 else 'ies'} observed"


def rep_line(rep: RepView, seen: RepDiagnostic | None) -> str:
    """One rep as a task's views list it: its verdict, or its failure and what it means."""
    if rep.status == "completed":
        return f"rep {rep.rep}: {rep.verdict or 'completed'}"
    detail = f" — {seen.detail}" if seen is not None and seen.detail else ""
    return f"rep {rep.rep}: failed {rep.reason or 'unknown'}{detail}"


def speaking_line(matching: TaskMatching) -> str:
    """Which rep's report the pairs are of."""
    why = matching.explanation
    rules = f"line window {why.line_window}, word overlap ≥ {why.title_overlap:.2f}"
    if matching.rep is None:
        return f"no rep completed: nothing reported ({rules})"
    return f"rep {matching.rep}'s report ({rules})"
