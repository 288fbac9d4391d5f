"""The agent report models and the bounded JSON parser."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.mechanism.spec import Track
from assay.schema.boundedjson import JsonLimitError, nesting_depth, parse_bounded
from assay.schema.exported import report_json_schema
from assay.schema.report import (
    AgentReport,
    ReportError,
    parse_report,
    validate_report,
)

VERDICT = {"decision": "BLOCK", "risk_score": 80, "confidence": 0.9, "summary": "bad"}
PLANES = {
    "action_plane": {"capabilities": [{"capability": "EXEC_SHELL", "evidence_ref": "a.sh:1"}]},
    "context_plane": {"injected_instructions": [{"file": "SKILL.md", "line": 3}]},
}
EVIDENCE: dict[Track, dict[str, Any]] = {
    Track.SKILLS: PLANES,
    Track.MCP_SERVERS: {**PLANES, "mcp_surface": {"tools": ["x"]}},
    Track.PACKAGES: {**PLANES, "lifecycle": {"install": []}, "supply_chain": {}},
    Track.REPOSITORIES: {
        "audit": {"files_analysed": 3, "lines_analysed": 120},
        "vulnerabilities": [{"file": "a.py", "line": 4, "cwe": 89, "title": "SQL injection"}],
    },
}
FINDING = {"category": "exfil", "severity": "HIGH", "plane": "action", "title": "sends keys"}


def report(track: Track, **extra: Any) -> dict[str, Any]:
    return {"verdict": VERDICT, "evidence": EVIDENCE[track], "findings": [FINDING], **extra}


@pytest.mark.parametrize("track", list(Track))
def test_each_track_accepts_its_evidence_and_round_trips(track: Track) -> None:
    parsed = validate_report(report(track), track, max_items=64)
    assert AgentReport.model_validate_json(parsed.model_dump_json()) == parsed


@pytest.mark.parametrize(
    ("track", "missing"),
    [
        (Track.SKILLS, "context_plane"),
        (Track.MCP_SERVERS, "mcp_surface"),
        (Track.PACKAGES, "supply_chain"),
        (Track.REPOSITORIES, "audit"),
    ],
)
def test_missing_required_evidence_is_malformed(track: Track, missing: str) -> None:
    evidence = {k: v for k, v in EVIDENCE[track].items() if k != missing}
    with pytest.raises(ReportError, match=rf"evidence\.{missing}: Field required"):
        validate_report({"verdict": VERDICT, "evidence": evidence}, track, max_items=64)


PHYLAX_STYLE: dict[Track, dict[str, Any]] = {
    Track.SKILLS: PLANES,
    Track.MCP_SERVERS: {**PLANES, "mcp_surface": {"exposed_tools": []}},
    Track.PACKAGES: {**PLANES, "lifecycle": {}, "supply_chain": {}},
    Track.REPOSITORIES: {"audit": {"files_analysed": 2}},
}


@pytest.mark.parametrize("track", list(Track))
def test_a_report_written_the_phylax_way_is_accepted(track: Track) -> None:
    """Bare string verdict, no confidence, no finding plane, no lines_analysed, bare names."""
    evidence = dict(PHYLAX_STYLE[track])
    if track.behavioural:
        evidence["action_plane"] = {"capabilities": ["EXEC_SHELL", "READ_SECRETS"]}
    finding = {k: v for k, v in FINDING.items() if k != "plane"}
    data = {"verdict": "block", "evidence": evidence, "findings": [finding]}
    parsed = validate_report(data, track, max_items=64)
    assert parsed.verdict.decision == "BLOCK" and parsed.verdict.risk_score == 0
    assert parsed.verdict.confidence is None and parsed.findings[0].plane is None
    if track.behavioural:
        assert parsed.evidence.action_plane is not None
        names = [c.capability for c in parsed.evidence.action_plane.capabilities]
        assert names == ["EXEC_SHELL", "READ_SECRET"]
    else:
        assert parsed.evidence.vulnerabilities == ()


@pytest.mark.parametrize("plane", ["supply_chain", {"a": 1}, [1], 7])
def test_unknown_finding_plane_is_dropped_not_fatal(plane: object) -> None:
    finding = {**FINDING, "plane": plane, "location": "line 3"}
    parsed = validate_report(report(Track.SKILLS, findings=[finding]), Track.SKILLS, max_items=64)
    assert parsed.findings[0].plane is None


def test_packages_without_context_plane_names_it() -> None:
    evidence = {k: v for k, v in PHYLAX_STYLE[Track.PACKAGES].items() if k != "context_plane"}
    with pytest.raises(ReportError) as caught:
        validate_report({"verdict": "ALLOW", "evidence": evidence}, Track.PACKAGES, max_items=64)
    assert "evidence.context_plane" in str(caught.value)


def test_repositories_need_at_least_one_file_analysed() -> None:
    data = report(Track.REPOSITORIES)
    data["evidence"] = {**data["evidence"], "audit": {"files_analysed": 0, "lines_analysed": 0}}
    with pytest.raises(ReportError):
        validate_report(data, Track.REPOSITORIES, max_items=64)


@pytest.mark.parametrize(
    "verdict",
    [
        {**VERDICT, "decision": "MAYBE"},
        {**VERDICT, "risk_score": 101},
        {**VERDICT, "confidence": -0.1},
        {"risk_score": 10},
        "MAYBE",
        7,
    ],
)
def test_invalid_verdicts(verdict: object) -> None:
    with pytest.raises(ReportError):
        validate_report({**report(Track.SKILLS), "verdict": verdict}, Track.SKILLS, max_items=64)


def test_unknown_capabilities_dropped_aliases_canonical_unknown_keys_kept() -> None:
    data = report(Track.SKILLS, extra_key={"kept": True})
    data["evidence"] = {
        **PLANES,
        "action_plane": {
            "capabilities": [
                {"capability": "TELEPORT"},
                {"capability": "read_secrets"},
                {"capability": "Exec-Shell", "note": 1},
                "not a dict",
            ]
        },
    }
    parsed = validate_report(data, Track.SKILLS, max_items=64)
    assert parsed.evidence.action_plane is not None
    names = [c.capability for c in parsed.evidence.action_plane.capabilities]
    assert names == ["READ_SECRET", "EXEC_SHELL"]
    assert parsed.model_extra == {"extra_key": {"kept": True}}


def test_at_most_64_findings_and_vulnerabilities_kept() -> None:
    data = report(Track.REPOSITORIES, findings=[FINDING] * 100)
    vuln = EVIDENCE[Track.REPOSITORIES]["vulnerabilities"][0]
    data["evidence"] = {**data["evidence"], "vulnerabilities": [vuln] * 100}
    parsed = validate_report(data, Track.REPOSITORIES, max_items=64)
    assert len(parsed.findings) == 64
    assert len(validate_report(data, Track.REPOSITORIES, max_items=None).findings) == 100
    assert parsed.evidence.vulnerabilities is not None
    assert len(parsed.evidence.vulnerabilities) == 64
    assert parsed.evidence.vulnerabilities[0].cwe == "89"


def test_severity_and_plane_spellings() -> None:
    finding = {**FINDING, "severity": "medium", "plane": "Context"}
    parsed = validate_report(report(Track.SKILLS, findings=[finding]), Track.SKILLS, max_items=64)
    assert parsed.findings[0].severity == "MED" and parsed.findings[0].plane == "context"


@pytest.mark.parametrize("track", list(Track))
def test_json_schema_export(track: Track) -> None:
    schema = report_json_schema(track)
    assert "verdict" in schema["required"] and "evidence" in schema["required"]
    json.dumps(schema)


def test_parse_report_limits() -> None:
    raw = json.dumps(report(Track.SKILLS)).encode()
    assert (
        parse_report(raw, Track.SKILLS, max_bytes=len(raw), max_items=64).verdict.decision
        == "BLOCK"
    )
    for bad in (raw[:-1], b"\xff\xfe" + raw, b"[]", b"NaN"):
        with pytest.raises(ReportError):
            parse_report(bad, Track.SKILLS, max_bytes=len(raw) + 10, max_items=64)
    with pytest.raises(ReportError):
        parse_report(raw, Track.SKILLS, max_bytes=len(raw) - 1, max_items=64)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"n": ' + b"9" * 5000 + b"}", "outside 64 bits"),
        (b'{"n": 9223372036854775808}', "outside 64 bits"),
        (b'{"n": 1e400}', "not a JSON number"),
        (b'{"s": "\\ud800"}', "surrogate"),
        ('{"e\u0301": 1, "\u00e9": 2}'.encode(), "collide"),
    ],
)
def test_reports_that_could_not_be_signed_are_malformed(raw: bytes, message: str) -> None:
    """Refused at acceptance, with a reason, so nothing stored is unsignable."""
    good = report(Track.SKILLS)
    extra = raw.decode()[1:-1]
    document = json.dumps(good)[:-1] + ", " + extra + "}"
    with pytest.raises(ReportError, match=message):
        parse_report(document.encode(), Track.SKILLS, max_bytes=1 << 20, max_items=64)


def test_nesting_100000_deep_is_refused_without_recursion() -> None:
    for deep in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000):
        with pytest.raises(JsonLimitError, match="nesting depth"):
            parse_bounded(deep, max_bytes=1 << 20)


def test_brackets_inside_strings_do_not_count() -> None:
    assert nesting_depth('["[[[[", {"k": "}}}\\"[["}]') == 2


@given(
    st.recursive(
        st.none() | st.integers(-(2**63), 2**63 - 1) | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_bounded_parse_agrees_with_json(value: object) -> None:
    raw = json.dumps(value).encode()
    assert parse_bounded(raw, max_bytes=len(raw), max_depth=1000) == value
