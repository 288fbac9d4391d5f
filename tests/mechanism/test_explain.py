"""The explanation of a matching says what the matcher decided, criterion by criterion."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.mechanism.explain import Explanation, explain
from assay.mechanism.matching import (
    FindingItem,
    Targets,
    VulnerabilityItem,
    _FindingKey,
    _VulnerabilityKey,
    maximum_matching,
    score_findings,
)
from assay.mechanism.spec import Track
from assay.schema.mechanism_file import pinned

SPEC = pinned()


def vuln(file: str, line: Any, cwe: Any, title: str = "") -> VulnerabilityItem:
    return VulnerabilityItem(file=file, line=line, cwe=cwe, title=title)


PLANTED = [
    vuln("app/db.py", 42, "CWE-89", "SQL injection"),
    vuln("app/db.py", 88, "CWE-78", "Command injection"),
    vuln("app/db.py", 120, "CWE-22", "Path traversal"),
    vuln("templates/view.js", 7, "CWE-79", "Cross-site scripting"),
]
REPORTED = [
    vuln("db.py", 45, "CWE-89"),
    vuln("app/db.py", 90, "CWE-77", "Command injection via shell"),
    vuln("app/db.py", 150, "CWE-22"),
    vuln("./templates\\view.js", 7, "CWE-079"),
    vuln("app/util.py", 3, "CWE-798"),
]


def checks(why: Explanation, subject: str, index: int) -> dict[str, tuple[bool, str]]:
    pair = next(p for p in why.pairs if p.subject == subject and getattr(p, subject) == index)
    return {c.criterion: (c.passed, c.why) for c in pair.checks}


def test_the_documented_worked_example_pair_by_pair() -> None:
    why = explain(Track.REPOSITORIES, REPORTED, PLANTED, SPEC)
    assert why.matched == (True, True, False, True)
    assert [p.subject for p in why.pairs] == ["expected"] * 4 + ["reported"] * 2
    first = checks(why, "expected", 0)
    assert first["file"] == (True, "same file (one path ends the other)")
    assert first["line"] == (True, "3 lines apart, within 10")
    assert first["cwe"] == (True, "same weakness")
    command = checks(why, "expected", 1)
    assert command["cwe"][0] is False and command["title"][0] is True
    assert command["title"][1] == "2/3 words in common, 0.67 ≥ 0.34"
    missed = next(p for p in why.pairs if p.expected == 2 and p.subject == "expected")
    assert (missed.matched, missed.reported) == (False, 2)  # the nearest: CWE-22 at 150
    assert checks(why, "expected", 2)["line"] == (False, "30 lines apart, more than 10")
    xss = next(p for p in why.pairs if p.expected == 3)
    assert xss.checks[0].reported == "templates/view.js"  # the spelling as normalised
    extra = checks(why, "reported", 4)
    assert extra["file"] == (False, "different files")


def test_findings_name_category_location_and_title() -> None:
    expected = [FindingItem("credential_theft", "Reads the SSH private key", "setup.py", 12)]
    reported = [
        FindingItem("credential-leak", "Reads SSH private key file", "pkg/setup.py", 30),
        FindingItem("exfiltration", "Reads the SSH private key", "setup.py", 12),
    ]
    why = explain(Track.PACKAGES, reported, expected, SPEC)
    assert why.matched == (False,)
    near = checks(why, "expected", 0)
    assert near["category"] == (True, "share 'credential'")
    assert near["line"] == (False, "18 lines apart, more than 10")
    other = checks(why, "reported", 1)
    assert other["category"] == (False, "no word in common")


def test_nothing_reported_and_nothing_expected_are_said_so() -> None:
    missed = explain(Track.SKILLS, [], [FindingItem("exfiltration", "x")], SPEC)
    assert missed.matched == (False,)
    assert missed.pairs[0].reported is None and not missed.pairs[0].checks
    noise = explain(Track.REPOSITORIES, [vuln("a.py", 1, 79)], [], SPEC)
    assert noise.note == "nothing planted: each reported item costs 1/5"
    assert noise.pairs[0].expected is None


def test_an_agreeing_pair_taken_by_another_is_not_matched_twice() -> None:
    planted = [vuln("a.py", 10, 89)]
    why = explain(Track.REPOSITORIES, [vuln("a.py", 11, 89), vuln("a.py", 12, 89)], planted, SPEC)
    assert why.matched == (True,)
    spare = next(p for p in why.pairs if p.subject == "reported")
    assert spare.agrees and not spare.matched


# -- the explanation agrees with the matcher, on any input --------------------------------

files = st.sampled_from(["app/db.py", "db.py", "src/app/db.py", "util.py", "", "./app\\db.py"])
lines = st.one_of(st.none(), st.integers(0, 40), st.just("12"), st.just("x"))
words = st.sampled_from(["sql injection", "command injection", "path traversal", "", "the"])
vulns = st.builds(
    VulnerabilityItem,
    file=st.one_of(st.none(), files),
    line=lines,
    cwe=st.one_of(st.none(), st.sampled_from([89, "CWE-089", "78", "cwe:22", "x"])),
    all_cwes=st.sampled_from([(), (78,), ("CWE-89", 22)]),
    title=words,
)
findings = st.builds(
    FindingItem,
    category=st.sampled_from(["credential_theft", "credential-leak", "exfiltration", ""]),
    title=words,
    file=st.one_of(st.none(), files),
    line=lines,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(vulns, max_size=5), st.lists(vulns, max_size=5))
def test_vulnerability_explanations_agree_with_the_matcher(
    reported: list[VulnerabilityItem], planted: list[VulnerabilityItem]
) -> None:
    why = explain(Track.REPOSITORIES, reported, planted, SPEC)
    for pair in why.pairs:
        if pair.expected is not None and pair.reported is not None:
            key = _VulnerabilityKey.reported(reported[pair.reported])
            assert pair.agrees == key.agrees(
                _VulnerabilityKey.planted(planted[pair.expected]), SPEC
            )
    targets = Targets.of(planted=planted)
    size = maximum_matching(
        [_VulnerabilityKey.reported(r) for r in reported],
        targets.vulnerabilities,
        lambda r, p: r.agrees(p, SPEC),
    )
    assert sum(why.matched) == size
    _every_item_once(why)


def _every_item_once(why: Explanation) -> None:
    """Each expected item is explained once; each reported one is matched or listed once."""
    about = [p.expected for p in why.pairs if p.subject == "expected"]
    assert about == list(range(len(why.expected)))
    matched = [p.reported for p in why.pairs if p.matched]
    extra = [p.reported for p in why.pairs if p.subject == "reported"]
    assert sorted(matched + extra) == list(range(len(why.reported)))
    assert all(p.agrees for p in why.pairs if p.matched)


@settings(max_examples=300, deadline=None)
@given(st.lists(findings, max_size=5), st.lists(findings, max_size=5))
def test_finding_explanations_agree_with_the_matcher(
    reported: list[FindingItem], expected: list[FindingItem]
) -> None:
    why = explain(Track.SKILLS, reported, expected, SPEC)
    for pair in why.pairs:
        if pair.expected is not None and pair.reported is not None:
            key = _FindingKey.of(reported[pair.reported])
            assert pair.agrees == key.agrees(_FindingKey.of(expected[pair.expected]), SPEC)
    size = maximum_matching(
        [_FindingKey.of(r) for r in reported],
        [_FindingKey.of(e) for e in expected],
        lambda r, e: r.agrees(e, SPEC),
    )
    assert sum(why.matched) == size
    _every_item_once(why)
    if expected and reported:
        precision, recall = size / len(reported), size / len(expected)
        f1 = 2 * precision * recall / (precision + recall) if size else 0.0
        assert abs(score_findings(reported, expected, SPEC) - f1) < 1e-12
