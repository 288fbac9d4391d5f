"""The agent report of DESIGN §4 as pydantic models.

Unknown keys are kept (extra="allow") but nothing reads them. Capability names
outside the taxonomy are dropped, aliases become canonical names; at most
`max_items_per_report` findings and vulnerabilities are kept. A report missing
the track's required evidence is a validation error (a malformed report).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
)

from assay.mechanism.spec import Track, pinned
from assay.schema.boundedjson import JsonLimitError, parse_bounded


class ReportError(ValueError):
    """The report is malformed (not JSON, too big, or fails the track's model)."""


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Decision(StrEnum):
    ALLOW = "ALLOW"
    WARN = "WARN"
    BLOCK = "BLOCK"


class Severity(StrEnum):
    LOW = "LOW"
    MED = "MED"
    HIGH = "HIGH"
    CRIT = "CRIT"


class Plane(StrEnum):
    ACTION = "action"
    CONTEXT = "context"
    PROTOCOL = "protocol"


_SEVERITY_ALIASES = {"MEDIUM": "MED", "CRITICAL": "CRIT"}


def _severity(value: object) -> object:
    if isinstance(value, str):
        key = value.strip().upper()
        return _SEVERITY_ALIASES.get(key, key)
    return value


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _upper(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


def _cwe_text(value: object) -> object:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


SeverityField = Annotated[Severity, BeforeValidator(_severity)]
CweField = Annotated[str, BeforeValidator(_cwe_text)]


def _cap_items(value: object) -> object:
    limit = pinned().max_items_per_report
    return value[:limit] if isinstance(value, list | tuple) else value


class Verdict(_Open):
    decision: Annotated[Decision, BeforeValidator(_upper)]
    risk_score: float = Field(ge=0, le=100)
    confidence: float = Field(ge=0, le=1)
    summary: str = ""


class CapabilityClaim(_Open):
    capability: str
    evidence_ref: str | None = None


class ActionPlane(_Open):
    capabilities: tuple[CapabilityClaim, ...] = ()

    @field_validator("capabilities", mode="before")
    @classmethod
    def _known_only(cls, value: object) -> object:
        """Keep claims whose name is in the taxonomy, under its canonical name."""
        from assay.mechanism.taxonomy import normalise

        if not isinstance(value, list | tuple):
            return value
        kept = []
        for item in value:
            name = normalise(item.get("capability")) if isinstance(item, dict) else None
            if name is not None:
                kept.append({**item, "capability": name})
        return kept


class InjectedInstruction(_Open):
    file: str | None = None
    line: int | None = Field(default=None, ge=0)
    technique: str | None = None
    excerpt: str | None = None


class ContextPlane(_Open):
    injected_instructions: tuple[InjectedInstruction, ...] = ()


class Finding(_Open):
    category: str
    severity: SeverityField
    plane: Annotated[Plane, BeforeValidator(_lower)]
    title: str
    file: str | None = None
    line: int | None = Field(default=None, ge=0)
    evidence_ref: str | None = None


class Vulnerability(_Open):
    file: str
    line: int = Field(ge=0)
    cwe: CweField
    all_cwes: tuple[CweField, ...] = ()
    title: str
    description: str | None = None
    severity: str | None = None
    remediation: str | None = None


class Audit(_Open):
    files_analysed: int = Field(ge=1)
    lines_analysed: int = Field(ge=0)


CappedFindings = Annotated[tuple[Finding, ...], BeforeValidator(_cap_items)]
CappedVulnerabilities = Annotated[tuple[Vulnerability, ...], BeforeValidator(_cap_items)]


class Evidence(_Open):
    """Every section any track may carry; `report_model(track)` says which are required."""

    action_plane: ActionPlane | None = None
    context_plane: ContextPlane | None = None
    mcp_surface: JsonValue = None
    lifecycle: JsonValue = None
    supply_chain: JsonValue = None
    audit: Audit | None = None
    vulnerabilities: CappedVulnerabilities | None = None


class SkillsEvidence(Evidence):
    action_plane: ActionPlane
    context_plane: ContextPlane


class McpServersEvidence(SkillsEvidence):
    mcp_surface: JsonValue = Field()


class PackagesEvidence(SkillsEvidence):
    lifecycle: JsonValue = Field()
    supply_chain: JsonValue = Field()


class RepositoriesEvidence(Evidence):
    audit: Audit
    vulnerabilities: CappedVulnerabilities


class AgentReport(_Open):
    """A validated report; `evidence` holds the sections its track required."""

    verdict: Verdict
    evidence: Evidence
    findings: CappedFindings = ()
    policy: JsonValue = None


class _SkillsReport(AgentReport):
    evidence: SkillsEvidence


class _McpServersReport(AgentReport):
    evidence: McpServersEvidence


class _PackagesReport(AgentReport):
    evidence: PackagesEvidence


class _RepositoriesReport(AgentReport):
    evidence: RepositoriesEvidence


_TRACK_MODELS: dict[Track, type[AgentReport]] = {
    Track.SKILLS: _SkillsReport,
    Track.MCP_SERVERS: _McpServersReport,
    Track.PACKAGES: _PackagesReport,
    Track.REPOSITORIES: _RepositoriesReport,
}


def report_model(track: Track | str) -> type[AgentReport]:
    return _TRACK_MODELS[Track(track)]


def report_json_schema(track: Track | str) -> dict[str, Any]:
    """JSON Schema of a valid report for `track` (what agent authors validate against)."""
    return report_model(track).model_json_schema()


def validate_report(data: object, track: Track | str) -> AgentReport:
    """Check `data` against the track's model; the result is a plain `AgentReport`."""
    try:
        checked = report_model(track).model_validate(data)
    except ValidationError as exc:
        raise ReportError(f"report does not match the {Track(track)} schema: {exc}") from exc
    return AgentReport.model_validate(checked.model_dump(mode="json"))


def parse_report(raw: bytes, track: Track | str, *, max_bytes: int) -> AgentReport:
    """A report from raw bytes: bounded JSON, then the track's model."""
    try:
        data = parse_bounded(raw, max_bytes=max_bytes)
    except JsonLimitError as exc:
        raise ReportError(str(exc)) from exc
    return validate_report(data, track)
