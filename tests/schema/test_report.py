"""The agent report models and the bounded JSON parser."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.mechanism.spec import Track
from assay.schema.boundedjson import JsonLimitError, nesting_depth, parse_bounded
from assay.schema.report import (
    AgentReport,
    ReportError,
    parse_report,
    report_json_schema,
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
    parsed = validate_report(report(track), track)
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
    with pytest.raises(ReportError):
        validate_report({"verdict": VERDICT, "evidence": evidence}, track)


def test_repositories_need_at_least_one_file_analysed() -> None:
    data = report(Track.REPOSITORIES)
    data["evidence"] = {**data["evidence"], "audit": {"files_analysed": 0, "lines_analysed": 0}}
    with pytest.raises(ReportError):
        validate_report(data, Track.REPOSITORIES)


@pytest.mark.parametrize(
    "verdict",
    [
        {**VERDICT, "decision": "MAYBE"},
        {**VERDICT, "risk_score": 101},
        {**VERDICT, "confidence": -0.1},
        {"decision": "ALLOW"},
        "BLOCK",
    ],
)
def test_invalid_verdicts(verdict: object) -> None:
    with pytest.raises(ReportError):
        validate_report({**report(Track.SKILLS), "verdict": verdict}, Track.SKILLS)


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
    parsed = validate_report(data, Track.SKILLS)
    assert parsed.evidence.action_plane is not None
    names = [c.capability for c in parsed.evidence.action_plane.capabilities]
    assert names == ["READ_SECRET", "EXEC_SHELL"]
    assert parsed.model_extra == {"extra_key": {"kept": True}}


def test_at_most_64_findings_and_vulnerabilities_kept() -> None:
    data = report(Track.REPOSITORIES, findings=[FINDING] * 100)
    vuln = EVIDENCE[Track.REPOSITORIES]["vulnerabilities"][0]
    data["evidence"] = {**data["evidence"], "vulnerabilities": [vuln] * 100}
    parsed = validate_report(data, Track.REPOSITORIES)
    assert len(parsed.findings) == 64
    assert parsed.evidence.vulnerabilities is not None
    assert len(parsed.evidence.vulnerabilities) == 64
    assert parsed.evidence.vulnerabilities[0].cwe == "89"


def test_severity_and_plane_spellings() -> None:
    finding = {**FINDING, "severity": "medium", "plane": "Context"}
    parsed = validate_report(report(Track.SKILLS, findings=[finding]), Track.SKILLS)
    assert parsed.findings[0].severity == "MED" and parsed.findings[0].plane == "context"


@pytest.mark.parametrize("track", list(Track))
def test_json_schema_export(track: Track) -> None:
    schema = report_json_schema(track)
    assert "verdict" in schema["required"] and "evidence" in schema["required"]
    json.dumps(schema)


def test_parse_report_limits() -> None:
    raw = json.dumps(report(Track.SKILLS)).encode()
    assert parse_report(raw, Track.SKILLS, max_bytes=len(raw)).verdict.decision == "BLOCK"
    for bad in (raw[:-1], b"\xff\xfe" + raw, b"[]", b"NaN"):
        with pytest.raises(ReportError):
            parse_report(bad, Track.SKILLS, max_bytes=len(raw) + 10)
    with pytest.raises(ReportError):
        parse_report(raw, Track.SKILLS, max_bytes=len(raw) - 1)


def test_nesting_100000_deep_is_refused_without_recursion() -> None:
    for deep in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000):
        with pytest.raises(JsonLimitError, match="nesting depth"):
            parse_bounded(deep, max_bytes=1 << 20)


def test_brackets_inside_strings_do_not_count() -> None:
    assert nesting_depth('["[[[[", {"k": "}}}\\"[["}]') == 2


@given(
    st.recursive(
        st.none() | st.integers() | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_bounded_parse_agrees_with_json(value: object) -> None:
    raw = json.dumps(value).encode()
    assert parse_bounded(raw, max_bytes=len(raw), max_depth=1000) == value
