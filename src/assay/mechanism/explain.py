"""Why each reported item matched an expected one, or did not (DESIGN §6).

The score needs only the size of the maximum matching (`matching`); an author
needs each pair's reasons: the file as normalised, the line distance against
the window, the CWE, the word overlap against the threshold. This module
weighs the same criteria on the same prepared keys as the matcher, one by one,
and says so in words every report prints as they are (so HTML, terminal, JSON
and Markdown cannot word a reason differently). The tests check that a pair's
`agrees` here equals the matcher's verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from assay.mechanism.matching import (
    FindingItem,
    VulnerabilityItem,
    _FindingKey,
    _jaccard,
    _matching,
    _Place,
    _suffix_match,
    _VulnerabilityKey,
)
from assay.mechanism.spec import MechanismSpec, Track

Criterion = Literal["category", "file", "line", "cwe", "title"]


@dataclass(frozen=True)
class Check:
    """One criterion of the matcher, weighed for one reported and one expected item."""

    criterion: Criterion
    passed: bool
    reported: str  # the reported side as compared (a path as normalised, a line, CWE-n...)
    expected: str
    why: str  # one line, e.g. "12 lines apart, more than the window of 10"


@dataclass(frozen=True)
class Pair:
    """An expected item and the reported one matched to it (or the nearest, when missed),
    or a reported item that matched nothing and the expected one nearest to it."""

    subject: Literal["expected", "reported"]  # which item this pair is about
    expected: int | None  # index into `Explanation.expected`; None when nothing is expected
    reported: int | None  # index into `Explanation.reported`; None when nothing was reported
    matched: bool  # paired by the one-to-one matching the score counts
    agrees: bool  # every criterion passes (an agreeing pair goes unmatched when its
    # partner is matched elsewhere)
    checks: tuple[Check, ...]


@dataclass(frozen=True)
class Explanation:
    """A report's items matched against a label's: every expected item first, in order,
    then every reported item that matched nothing."""

    kind: Literal["findings", "vulnerabilities"]
    line_window: int
    title_overlap: float
    expected: tuple[FindingItem, ...] | tuple[VulnerabilityItem, ...]
    reported: tuple[FindingItem, ...] | tuple[VulnerabilityItem, ...]
    pairs: tuple[Pair, ...]
    note: str = ""  # what reported items do when nothing is expected

    @property
    def matched(self) -> tuple[bool, ...]:
        """Per expected item, whether the report matched it."""
        hits = {p.expected for p in self.pairs if p.matched}
        return tuple(i in hits for i in range(len(self.expected)))


def explain(
    track: Track,
    reported: Sequence[FindingItem] | Sequence[VulnerabilityItem],
    expected: Sequence[FindingItem] | Sequence[VulnerabilityItem],
    spec: MechanismSpec,
) -> Explanation:
    """The matching of a report against a label, pair by pair, with every criterion's reason.

    Behavioural tracks match findings against expected findings; repositories
    match vulnerabilities against planted ones. Reported items beyond the
    report limit are not matched, as in scoring.
    """
    kept = tuple(reported[: spec.max_items_per_report])
    if track.behavioural:
        found = tuple(FindingItem.of(i) for i in kept)
        truth = tuple(FindingItem.of(i) for i in expected)
        pairs = _pairs(
            [_FindingKey.of(r) for r in found],
            [_FindingKey.of(e) for e in truth],
            lambda r, e: _finding_checks(r, e, spec),
        )
        note = "" if truth else "no findings expected on this task: reported ones do not count"
        return Explanation(
            "findings", spec.line_window, spec.title_overlap, truth, found, pairs, note
        )
    vulns = tuple(VulnerabilityItem.of(i) for i in kept)
    planted = tuple(VulnerabilityItem.of(i) for i in expected)
    pairs = _pairs(
        [_VulnerabilityKey.reported(r) for r in vulns],
        [_VulnerabilityKey.planted(p) for p in planted],
        lambda r, p: _vulnerability_checks(r, p, spec),
    )
    note = (
        ""
        if planted
        else f"nothing planted: each reported item costs 1/{spec.clean_repository_divisor}"
    )
    return Explanation(
        "vulnerabilities", spec.line_window, spec.title_overlap, planted, vulns, pairs, note
    )


@dataclass(frozen=True)
class _Weighed:
    checks: tuple[Check, ...]
    agrees: bool

    @property
    def closeness(self) -> tuple[bool, int]:
        return self.agrees, sum(c.passed for c in self.checks)


Key = TypeVar("Key")


def _pairs(
    reported: Sequence[Key], expected: Sequence[Key], weigh: Callable[[Key, Key], _Weighed]
) -> tuple[Pair, ...]:
    table = [[weigh(r, e) for e in expected] for r in reported]
    owner = _matching(range(len(reported)), range(len(expected)), lambda r, e: table[r][e].agrees)
    partner_of = {r: e for e, r in owner.items()}
    pairs = []
    for e in range(len(expected)):
        r = owner.get(e)
        if r is None:
            r = _nearest([table[i][e] for i in range(len(reported))], set(partner_of))
        pairs.append(_pair("expected", e, r, r is not None and owner.get(e) == r, table))
    for r in range(len(reported)):
        if r not in partner_of:
            pairs.append(_pair("reported", _nearest(table[r], set(owner)), r, False, table))
    return tuple(pairs)


def _nearest(row: Sequence[_Weighed], taken: set[int]) -> int | None:
    """The candidate passing most criteria, or None without any. Among equals, one not
    matched elsewhere (the item the author may have meant), then the first."""
    if not row:
        return None
    return max(range(len(row)), key=lambda i: (row[i].closeness, i not in taken, -i))


def _pair(
    subject: Literal["expected", "reported"],
    e: int | None,
    r: int | None,
    matched: bool,
    table: Sequence[Sequence[_Weighed]],
) -> Pair:
    if e is None or r is None:
        return Pair(subject, e, r, False, False, ())
    weighed = table[r][e]
    return Pair(subject, e, r, matched, weighed.agrees, weighed.checks)


# -- the criteria, in the matcher's order ------------------------------------------------


def _finding_checks(r: _FindingKey, e: _FindingKey, spec: MechanismSpec) -> _Weighed:
    category = _category(r, e)
    title = _overlap("title", r.title, e.title, spec)
    if not e.has_file:
        place = Check("file", True, _path(r.place), "—", "no file expected: any location agrees")
        return _Weighed((category, place, title), category.passed and title.passed)
    file = _file(r.place, e.place)
    if r.place.line_given and e.place.line_given:
        line = _line(r.place, e.place, spec)
    else:
        line = Check(
            "line", True, _line_text(r.place), _line_text(e.place), "no line on one side: any line"
        )
    agrees = category.passed and file.passed and line.passed and title.passed
    return _Weighed((category, file, line, title), agrees)


def _vulnerability_checks(
    r: _VulnerabilityKey, p: _VulnerabilityKey, spec: MechanismSpec
) -> _Weighed:
    file = _file(r.place, p.place)
    line = _line(r.place, p.place, spec)
    cwe = _cwe(r.cwes, p.cwes)
    wording = _overlap("title", r.wording, p.wording, spec)
    agrees = file.passed and line.passed and (cwe.passed or wording.passed)
    return _Weighed((file, line, cwe, wording), agrees)


def _words(category: frozenset[str]) -> str:
    return " ".join(sorted(category)) or "—"


def _category(r: _FindingKey, e: _FindingKey) -> Check:
    shared = sorted(r.category & e.category)
    mine, theirs = _words(r.category), _words(e.category)
    if shared:
        return Check("category", True, mine, theirs, f"share {shared[0]!r}")
    return Check("category", False, mine, theirs, "no word in common")


def _path(place: _Place) -> str:
    return "/".join(place.parts) or "—"


def _file(r: _Place, e: _Place) -> Check:
    mine, theirs = _path(r), _path(e)
    if not r.parts:
        return Check("file", False, mine, theirs, "no file reported")
    if not e.parts:
        return Check("file", False, mine, theirs, "the label names no usable file")
    if not _suffix_match(r.parts, e.parts):
        return Check("file", False, mine, theirs, "different files")
    if r.parts == e.parts:
        return Check("file", True, mine, theirs, "same file")
    return Check("file", True, mine, theirs, "same file (one path ends the other)")


def _line_text(place: _Place) -> str:
    if place.line is not None:
        return str(place.line)
    return "not a number" if place.line_given else "—"


def _line(r: _Place, e: _Place, spec: MechanismSpec) -> Check:
    mine, theirs = _line_text(r), _line_text(e)
    window = spec.line_window
    if r.line is None:
        why = "no line reported" if not r.line_given else "the reported line is not a number"
        return Check("line", False, mine, theirs, why)
    if e.line is None:
        return Check("line", False, mine, theirs, "the label gives no line number")
    distance = abs(r.line - e.line)
    if distance <= window:
        return Check("line", True, mine, theirs, f"{_lines(distance)} apart, within {window}")
    return Check("line", False, mine, theirs, f"{_lines(distance)} apart, more than {window}")


def _lines(n: int) -> str:
    return "1 line" if n == 1 else f"{n} lines"


def _cwe(r: frozenset[int], p: frozenset[int]) -> Check:
    mine = " ".join(f"CWE-{c}" for c in sorted(r)) or "—"
    theirs = " or ".join(f"CWE-{c}" for c in sorted(p)) or "—"
    if r & p:
        return Check("cwe", True, mine, theirs, "same weakness")
    if not r:
        return Check("cwe", False, mine, theirs, "no CWE reported: the wording must match")
    if not p:
        return Check("cwe", False, mine, theirs, "none planted: the wording must match")
    return Check("cwe", False, mine, theirs, "different weakness: the wording must match")


def _overlap(
    criterion: Criterion, r: frozenset[str], e: frozenset[str], spec: MechanismSpec
) -> Check:
    overlap = _jaccard(r, e)
    bound = spec.title_overlap
    mine, theirs = " ".join(sorted(r)) or "—", " ".join(sorted(e)) or "—"
    common = len(r & e)
    ratio = f"{common}/{len(r | e)} words in common, {overlap:.2f}"
    if overlap >= bound:
        return Check(criterion, True, mine, theirs, f"{ratio} ≥ {bound:.2f}")
    return Check(criterion, False, mine, theirs, f"{ratio} < {bound:.2f}")
