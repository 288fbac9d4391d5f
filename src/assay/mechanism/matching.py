"""One-to-one matching of reported items against expected ones (DESIGN §6).

Two families share one machinery: behavioural findings (category, location,
title wording) and repository vulnerabilities (file, weakness or wording, line
window). Both use a *maximum* bipartite matching: greedy first-fit
under-credits whenever an early report takes the partner a later one needed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, Self, TypeVar

from assay.mechanism.metrics import fbeta
from assay.mechanism.spec import MechanismSpec


class _Item:
    @classmethod
    def of(cls, item: object) -> Self:
        """The item itself, or one read from a JSON object (unknown keys are ignored)."""
        if isinstance(item, cls):
            return item
        if not isinstance(item, Mapping):
            raise TypeError(f"{cls.__name__} or a JSON object expected, got {type(item).__name__}")
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in item.items() if k in names and v is not None})


# Not slotted: msgspec reads a plain dataclass about as fast as a dict, a slotted one
# half as fast (a million rep records each carry a few of these).
@dataclass(frozen=True)
class FindingItem(_Item):
    """A finding as matching reads it: reported by an agent or expected by a label."""

    category: str = ""
    title: str = ""
    file: str | None = None
    line: int | str | None = None  # a line number; any other value never matches a line
    severity: str | None = None
    plane: str | None = None
    evidence_ref: str | None = None


@dataclass(frozen=True)
class VulnerabilityItem(_Item):
    """A vulnerability as matching reads it: reported by an agent or planted in a repository."""

    file: str | None = None
    line: int | str | None = None
    cwe: str | int | None = None
    all_cwes: tuple[str | int, ...] = ()
    title: str = ""
    description: str | None = None
    severity: str | None = None
    remediation: str | None = None


Findings = Sequence[FindingItem | Mapping[str, Any]]
Vulnerabilities = Sequence[VulnerabilityItem | Mapping[str, Any]]

_WORD = re.compile(r"[a-z0-9]+")
_CWE = re.compile(r"^\s*(?:cwe)?[\s_:-]*0*(\d+)\s*$", re.IGNORECASE)
# Words that carry no meaning for whether two descriptions name the same flaw.
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "via",
        "with",
    }
)


def tokens(text: object) -> frozenset[str]:
    """Lower-cased word tokens without stopwords, a trailing plural `s` folded."""
    return _tokens(text) if isinstance(text, str) else frozenset()


# Titles and paths recur across agents and reps; caching them keeps scoring a
# million records cheap.
@lru_cache(maxsize=65536)
def _tokens(text: str) -> frozenset[str]:
    words = _WORD.findall(text.lower())
    return frozenset(
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in words
        if w not in _STOPWORDS
    )


def token_overlap(a: object, b: object) -> float:
    """Jaccard overlap of the two texts' token sets (0.0 when either is empty)."""
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def _path_parts(path: object) -> tuple[str, ...]:
    return _split_path(path) if isinstance(path, str) else ()


@lru_cache(maxsize=65536)
def _split_path(path: str) -> tuple[str, ...]:
    parts = path.replace("\\", "/").split("/")
    return tuple(p for p in parts if p not in ("", "."))


def same_file(a: object, b: object) -> bool:
    """Equal paths, or one a suffix of the other at path-component boundaries.

    `src/app/db.py` and `app/db.py` agree; `app/db.py` and `pp/db.py` do not.
    """
    return _suffix_match(_path_parts(a), _path_parts(b))


def _line(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def cwe_number(value: object) -> int | None:
    """CWE identifiers compared as numbers: `CWE-79`, `cwe-079`, `79` and 79 are one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        m = _CWE.match(value)
        return int(m.group(1)) if m else None
    return None


def _cwes(item: VulnerabilityItem, *, alternatives: bool) -> frozenset[int]:
    """The weaknesses an item names. A planted one's `all_cwes` are the alternatives its
    curator accepts; a reported one names its `cwe` alone, since an agent listing every
    CWE in `all_cwes` would otherwise match any planted weakness on its line."""
    listed = item.all_cwes if alternatives and isinstance(item.all_cwes, list | tuple) else ()
    found = [cwe_number(c) for c in (item.cwe, *listed)]
    return frozenset(c for c in found if c is not None)


@lru_cache(maxsize=65536)
def _category_words(category: str) -> frozenset[str]:
    return frozenset(_WORD.findall(category.lower()))


def categories_agree(a: object, b: object) -> bool:
    """Normalised categories equal, or sharing a word (`credential_theft` ~ `credential-leak`)."""
    return bool(_category_words(str(a)) & _category_words(str(b)))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _suffix_match(pa: tuple[str, ...], pb: tuple[str, ...]) -> bool:
    if not pa or not pb:
        return False
    n = min(len(pa), len(pb))
    return pa[-n:] == pb[-n:]


# What matching compares, extracted once per item rather than once per pair:
# a 64 x 64 report would otherwise re-tokenise every title 64 times.
@dataclass(frozen=True, slots=True)
class _Place:
    parts: tuple[str, ...]
    line_given: bool
    line: int | None  # None when absent or not a line number

    @classmethod
    def of(cls, item: FindingItem | VulnerabilityItem) -> _Place:
        return cls(_path_parts(item.file), item.line is not None, _line(item.line))

    def near(self, other: _Place, window: int) -> bool:
        return (
            self.line is not None
            and other.line is not None
            and abs(self.line - other.line) <= window
        )


@dataclass(frozen=True, slots=True)
class _FindingKey:
    category: frozenset[str]
    place: _Place
    has_file: bool
    title: frozenset[str]

    @classmethod
    def of(cls, item: FindingItem) -> _FindingKey:
        return cls(
            _category_words(str(item.category)),
            _Place.of(item),
            item.file is not None,
            tokens(item.title),
        )

    def agrees(self, expected: _FindingKey, spec: MechanismSpec) -> bool:
        if not self.category & expected.category:
            return False
        if expected.has_file and not self._same_location(expected, spec):
            return False
        return _jaccard(self.title, expected.title) >= spec.title_overlap

    def _same_location(self, expected: _FindingKey, spec: MechanismSpec) -> bool:
        """Files agree; lines, when both give one, lie within the window."""
        mine, theirs = self.place, expected.place
        if not _suffix_match(mine.parts, theirs.parts):
            return False
        if not (mine.line_given and theirs.line_given):
            return True
        return mine.near(theirs, spec.line_window)


@dataclass(frozen=True, slots=True)
class _VulnerabilityKey:
    place: _Place
    cwes: frozenset[int]
    wording: frozenset[str]

    @classmethod
    def reported(cls, item: VulnerabilityItem) -> _VulnerabilityKey:
        return cls(_Place.of(item), _cwes(item, alternatives=False), tokens(_wording(item)))

    @classmethod
    def planted(cls, item: VulnerabilityItem) -> _VulnerabilityKey:
        return cls(_Place.of(item), _cwes(item, alternatives=True), tokens(_wording(item)))

    def agrees(self, planted: _VulnerabilityKey, spec: MechanismSpec) -> bool:
        if not _suffix_match(self.place.parts, planted.place.parts):
            return False
        if not self.place.near(planted.place, spec.line_window):
            return False
        if self.cwes & planted.cwes:
            return True
        return _jaccard(self.wording, planted.wording) >= spec.title_overlap


def _wording(item: VulnerabilityItem) -> str:
    return f"{item.title or ''} {item.description or ''}"


Key = TypeVar("Key")


def maximum_matching(
    reported: Sequence[Key], expected: Sequence[Key], agree: Callable[[Key, Key], bool]
) -> int:
    """Size of a maximum one-to-one matching between reported and expected items."""
    return len(_matching(reported, expected, agree))


def _matching(
    reported: Sequence[Key], expected: Sequence[Key], agree: Callable[[Key, Key], bool]
) -> dict[int, int]:
    """A maximum one-to-one matching, as {expected index: reported index}.

    Kuhn's augmenting paths, written here rather than taken from
    scipy.sparse.csgraph: graphs are capped at 64 x 64 by the report limit, and
    building a sparse matrix costs ~300 us a call, which dominated scoring a
    million-record round. The tests cross-check it against scipy.
    """
    partners = [[e for e, ei in enumerate(expected) if agree(ri, ei)] for ri in reported]
    owner: dict[int, int] = {}

    def augment(r: int, seen: set[int]) -> bool:
        for e in partners[r]:
            if e not in seen:
                seen.add(e)
                if e not in owner or augment(owner[e], seen):
                    owner[e] = r
                    return True
        return False

    for r in range(len(reported)):
        if partners[r]:
            augment(r, set())
    return owner


def _findings(items: Findings | Vulnerabilities, spec: MechanismSpec) -> list[FindingItem]:
    return [FindingItem.of(i) for i in items[: spec.max_items_per_report]]


def _vulnerabilities(
    items: Findings | Vulnerabilities, spec: MechanismSpec
) -> list[VulnerabilityItem]:
    return [VulnerabilityItem.of(i) for i in items[: spec.max_items_per_report]]


def vulnerability_agrees(
    reported: VulnerabilityItem, planted: VulnerabilityItem, spec: MechanismSpec
) -> bool:
    return _VulnerabilityKey.reported(reported).agrees(_VulnerabilityKey.planted(planted), spec)


@dataclass(frozen=True)
class Targets:
    """A label's expected findings or planted vulnerabilities, prepared once for
    matching: every agent and rep of the task is scored against the same ones."""

    findings: tuple[_FindingKey, ...] = ()
    vulnerabilities: tuple[_VulnerabilityKey, ...] = ()

    @classmethod
    def of(
        cls, expected: Sequence[FindingItem] = (), planted: Sequence[VulnerabilityItem] = ()
    ) -> Targets:
        return cls(
            tuple(_FindingKey.of(e) for e in expected),
            tuple(_VulnerabilityKey.planted(p) for p in planted),
        )


def score_findings(
    reported: Findings,
    expected: Findings | Targets,
    spec: MechanismSpec,
) -> float:
    """F1 of the maximum matching of reported findings against the expected ones.

    Whether the task verdict was right is the caller's concern (findings are
    credited only there; see `scoring`). With nothing expected, an empty report
    is perfect and anything reported is noise.
    """
    targets = (
        expected
        if isinstance(expected, Targets)
        else Targets.of(expected=[FindingItem.of(e) for e in expected])
    )
    found = _findings(reported, spec)
    if not targets.findings:
        return 0.0 if found else 1.0
    matched = maximum_matching(
        [_FindingKey.of(r) for r in found], targets.findings, lambda r, e: r.agrees(e, spec)
    )
    return fbeta(*_precision_recall(matched, len(found), len(targets.findings)), beta=1.0)


def score_repository(
    reported: Vulnerabilities,
    planted: Vulnerabilities | Targets,
    spec: MechanismSpec,
) -> float:
    """F2 of reported against planted vulnerabilities; the clean rule when none are planted.

    DESIGN §6's worked example: 4 planted, 5 reported, 3 of them matched (the same
    file, the weakness or the wording, within the line window).

    >>> from assay.schema.mechanism_file import pinned
    >>> planted = [VulnerabilityItem("app.py", line, "CWE-89") for line in (10, 40, 70, 100)]
    >>> reported = [VulnerabilityItem("src/app.py", line, "89") for line in (12, 45, 79, 200, 300)]
    >>> round(score_repository(reported, planted, pinned()), 3)
    0.714
    >>> score_repository([], [], pinned()), score_repository(reported[:2], [], pinned())
    (1.0, 0.6)
    """
    targets = (
        planted
        if isinstance(planted, Targets)
        else Targets.of(planted=[VulnerabilityItem.of(p) for p in planted])
    )
    found = _vulnerabilities(reported, spec)
    if not targets.vulnerabilities:
        return max(0.0, 1.0 - len(found) / spec.clean_repository_divisor)
    matched = maximum_matching(
        [_VulnerabilityKey.reported(r) for r in found],
        targets.vulnerabilities,
        lambda r, p: r.agrees(p, spec),
    )
    return fbeta(*_precision_recall(matched, len(found), len(targets.vulnerabilities)), beta=2.0)


def _precision_recall(matched: int, reported: int, expected: int) -> tuple[float, float]:
    precision = matched / reported if reported else 0.0
    recall = matched / expected if expected else 0.0
    return precision, recall
