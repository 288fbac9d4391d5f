"""The JSON Schema `assay schema --track T` prints: exactly what the report models accept.

Pydantic's own export describes the models' types after their `BeforeValidator`s
have run; the models accept more than that before (a bare capability name, `MEDIUM`,
`block`, a CWE as a number, `null` for an empty list, names outside the taxonomy,
which are dropped). This widens those spots to what the validator accepts, and
lists the taxonomy's capability names and the corpus's finding categories as enums
(`$defs.CapabilityName`, `$defs.FindingCategory`) beside the free spelling, so an
editor can offer them. `tests/schema/test_exported_schema.py` checks the schema and
the models agree, report by report.

What JSON Schema cannot say, the validator still refuses: a report over 1 MiB,
integers outside 64 bits, keys that collide after Unicode NFC normalisation, lone
surrogates (see `parse_report`).
"""

from __future__ import annotations

from typing import Any

from assay.mechanism.spec import Track
from assay.mechanism.taxonomy import ALIASES, CAPABILITIES, FINDING_CATEGORIES
from assay.schema.report import Decision, Plane, Severity, report_model
from assay.schema.spelling import forgiving_pattern

_SEVERITY_WORDS = [*(s.value for s in Severity), "MEDIUM", "CRITICAL"]


def _forgiving(enum: list[str], words: list[str], separators: str, what: str) -> dict[str, Any]:
    return {
        "anyOf": [
            {"enum": enum},
            {
                "type": "string",
                "pattern": forgiving_pattern(words, separators),
                "description": f"{what} in any case, with surrounding spaces",
            },
        ]
    }


def _capability_item() -> dict[str, Any]:
    known = forgiving_pattern([*CAPABILITIES, *ALIASES], "- ")
    return {
        "description": "a capability name (or alias), or {capability, evidence_ref}; "
        "anything that names no capability of the taxonomy is dropped, not fatal",
        "anyOf": [
            {"$ref": "#/$defs/CapabilityName"},
            {"$ref": "#/$defs/CapabilityClaim"},
            {"description": "anything else: dropped"},
        ],
        # A claim naming a known capability is kept, so it must be a well-formed claim.
        "if": {
            "type": "object",
            "required": ["capability"],
            "properties": {"capability": {"type": "string", "pattern": known}},
        },
        "then": {"properties": {"evidence_ref": {"type": ["string", "null"]}}},
    }


def _nullable(schema: dict[str, Any], note: str) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null", "description": note}]}


_CWE = {
    "anyOf": [{"type": "string"}, {"type": "integer"}],
    "description": "CWE-89, cwe-089, 89: compared as numbers",
}


def report_json_schema(track: Track | str) -> dict[str, Any]:
    """JSON Schema of a valid report for `track` (what agent authors validate against)."""
    schema = report_model(track).model_json_schema()
    defs = schema["$defs"]
    defs["Decision"] = _forgiving(
        [d.value for d in Decision], [d.value for d in Decision], "", "ALLOW, WARN or BLOCK"
    )
    defs["Severity"] = _forgiving(
        [s.value for s in Severity], _SEVERITY_WORDS, "", "LOW, MED(IUM), HIGH or CRIT(ICAL)"
    )
    defs["CapabilityName"] = {
        "type": "string",
        "enum": sorted(CAPABILITIES),
        "description": "the taxonomy's canonical capability names (docs/agents.md)",
    }
    defs["FindingCategory"] = {
        "type": "string",
        "enum": list(FINDING_CATEGORIES),
        "description": "the categories the corpus's expected findings use",
    }
    defs["ActionPlane"]["properties"]["capabilities"]["items"] = _capability_item()
    claim = defs["CapabilityClaim"]["properties"]
    claim["capability"] = {"anyOf": [{"$ref": "#/$defs/CapabilityName"}, {"type": "string"}]}
    finding = defs["Finding"]["properties"]
    finding["category"] = {
        "anyOf": [{"$ref": "#/$defs/FindingCategory"}, {"type": "string"}],
        "description": finding["category"]["description"],
    }
    finding["plane"] = {
        "anyOf": [{"enum": [p.value for p in Plane]}, {"description": "anything else: dropped"}],
        "description": finding["plane"]["description"],
    }
    if "Vulnerability" in defs:
        vulnerability = defs["Vulnerability"]["properties"]
        vulnerability["cwe"] = _CWE
        vulnerability["all_cwes"] = {"type": "array", "items": _CWE, "description": "accepted"}
    properties = schema["properties"]
    properties["findings"] = _nullable(properties["findings"], "no findings")
    if Track(track) is Track.REPOSITORIES:
        evidence = defs["RepositoriesEvidence"]["properties"]
        evidence["vulnerabilities"] = _nullable(evidence["vulnerabilities"], "none found")
    schema["description"] = (
        f"An agent's report on the {Track(track).value} track (docs/agents.md, 'The report'). "
        "Unknown keys are kept and ignored."
    )
    return schema
