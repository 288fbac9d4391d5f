"""The agent report of DESIGN §4 as pydantic models.

What is accepted is what Phylax's own validator accepts, plus what assay's
scoring needs: a bare string verdict is the decision (risk 0); `confidence`,
`summary`, a finding's `plane`, `audit.lines_analysed` and a vulnerability's
`line`, `cwe` and `title` are optional; capabilities may be bare names. Both
evidence planes stay required on the behavioural tracks, because the scoring
rules read both.

Unknown keys are kept (extra="allow") but nothing reads them. Capability names
outside the taxonomy are dropped, aliases become canonical names; at most
`max_items_per_report` findings and vulnerabilities are kept. A report missing
the track's required evidence is a validation error (a malformed report), and
so is anything that could not be signed later (see `parse_report`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from assay.mechanism.spec import Track
from assay.schema.boundedjson import JsonLimitError, parse_bounded
from assay.schema.canonical import CanonicalError, canonical_bytes


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


def _known_plane(value: object) -> object:
    # Phylax agents also say e.g. "supply_chain"; the plane is advisory, so an
    # unknown one is dropped like an unknown capability, not fatal.
    lowered = _lower(value)
    # Only a string can name a plane (a list or an object is not hashable, so not even
    # asked): anything else is dropped too.
    return lowered if isinstance(lowered, str) and lowered in set(Plane) else None


def _upper(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


def _cwe_text(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON Schema's integer: 79.0 is 79
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _json_number(value: object) -> object:
    """A number as JSON writes it: "12" or true is not one. (Left lax, the model would
    read both, which no JSON Schema says; the exported schema and the model agree.)"""
    if isinstance(value, str | bool):
        raise ValueError("a JSON number is expected, not a string or a boolean")
    return value


SeverityField = Annotated[Severity, BeforeValidator(_severity)]
CweField = Annotated[str, BeforeValidator(_cwe_text)]
Number = BeforeValidator(_json_number)
LineField = Annotated[
    Annotated[int, Field(ge=0)] | None,
    Number,
    Field(description="1-based line number; a JSON integer, not a string"),
]


def _cap_items(value: object, info: ValidationInfo) -> object:
    # The cap comes with the validation (`validate_report`'s max_items); a report read
    # back from the store was capped when it was accepted.
    limit = (info.context or {}).get("max_items")
    return value[:limit] if limit is not None and isinstance(value, list | tuple) else value


def _bare_decision(value: object) -> object:
    # Phylax's runner reads `"verdict": "BLOCK"` as that decision with risk 0.
    return {"decision": value, "risk_score": 0} if isinstance(value, str) else value


class Verdict(_Open):
    """The agent's decision on the artifact; a bare decision string is read as `{decision}`."""

    decision: Annotated[Decision, BeforeValidator(_upper)] = Field(
        description="ALLOW, WARN or BLOCK (any case); WARN and BLOCK both flag the artifact"
    )
    risk_score: Annotated[float, Number] = Field(default=0.0, ge=0, le=100)
    confidence: Annotated[float | None, Number] = Field(default=None, ge=0, le=1)
    summary: str = ""


class CapabilityClaim(_Open):
    capability: str = Field(description="a capability name of the taxonomy, or an alias")
    evidence_ref: str | None = Field(default=None, description="where the evidence is")


class ActionPlane(_Open):
    """What the artifact makes happen."""

    capabilities: tuple[CapabilityClaim, ...] = Field(
        default=(),
        description="capability names (or {capability, evidence_ref}); names outside the "
        "taxonomy are dropped, aliases mapped, case and -/space separators forgiven",
    )

    @field_validator("capabilities", mode="before")
    @classmethod
    def _known_only(cls, value: object) -> object:
        """Keep claims whose name is in the taxonomy, under its canonical name."""
        from assay.mechanism.taxonomy import normalise

        if not isinstance(value, list | tuple):
            return value
        kept = []
        for item in value:
            claim = {"capability": item} if isinstance(item, str) else item
            name = normalise(claim.get("capability")) if isinstance(claim, dict) else None
            if name is not None:
                kept.append({**claim, "capability": name})
        return kept


class InjectedInstruction(_Open):
    file: str | None = None
    line: LineField = None
    technique: str | None = None
    excerpt: str | None = None


class ContextPlane(_Open):
    """What the artifact tries to make a reading agent do."""

    injected_instructions: tuple[InjectedInstruction, ...] = ()


class Finding(_Open):
    """A finding, matched against the label's expected findings by category, place and title."""

    category: str = Field(
        description="what kind of harm; matched by words, so credential_theft ~ credential-leak"
    )
    severity: SeverityField = Field(description="LOW, MED, HIGH or CRIT (MEDIUM, CRITICAL)")
    plane: Annotated[Plane | None, BeforeValidator(_known_plane)] = Field(
        default=None, description="action, context or protocol; any other value is dropped"
    )
    title: str = Field(description="one line; its words are matched against the label's")
    file: str | None = Field(default=None, description="path inside the artifact")
    line: LineField = None
    evidence_ref: str | None = None


class Vulnerability(_Open):
    """A reported weakness. Without a `line` it is accepted but cannot match a planted one."""

    file: str = Field(description="path inside the repository")
    line: LineField = None
    cwe: CweField = Field(default="", description="the weakness: CWE-89, cwe-089 or 89")
    all_cwes: tuple[CweField, ...] = Field(default=(), description="accepted, not matched")
    title: str = ""
    description: str | None = None
    severity: str | None = None
    remediation: str | None = None


class Audit(_Open):
    files_analysed: Annotated[int, Number] = Field(ge=1)
    lines_analysed: Annotated[int | None, Number] = Field(default=None, ge=0)


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


def _empty_if_null(value: object) -> object:
    return () if value is None else value


CappedVulnerabilityList = Annotated[CappedVulnerabilities, BeforeValidator(_empty_if_null)]


class RepositoriesEvidence(Evidence):
    audit: Audit
    vulnerabilities: CappedVulnerabilityList = ()


class AgentReport(_Open):
    """A validated report; `evidence` holds the sections its track required."""

    verdict: Annotated[
        Verdict, BeforeValidator(_bare_decision, json_schema_input_type=Verdict | Decision)
    ]
    evidence: Evidence
    findings: Annotated[CappedFindings, BeforeValidator(_empty_if_null)] = ()
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


_MAX_ERRORS_SHOWN = 3


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "report"


def describe(exc: ValidationError) -> str:
    """The first few problems, each as `path: message`, e.g. `evidence.context_plane: ...`."""
    errors = exc.errors(include_url=False, include_input=False)
    parts = [f"{_where(e['loc'])}: {e['msg']}" for e in errors[:_MAX_ERRORS_SHOWN]]
    more = len(errors) - _MAX_ERRORS_SHOWN
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def validate_report(data: object, track: Track | str, *, max_items: int | None) -> AgentReport:
    """Check `data` against the track's model; the result is a plain `AgentReport`,
    with at most `max_items` findings and vulnerabilities (None: all kept)."""
    try:
        checked = report_model(track).model_validate(data, context={"max_items": max_items})
    except ValidationError as exc:
        raise ReportError(
            f"does not match the {Track(track)} report schema: {describe(exc)}"
        ) from exc
    return AgentReport.model_validate(checked.model_dump(mode="json"))


def parse_report(raw: bytes, track: Track | str, *, max_bytes: int, max_items: int) -> AgentReport:
    """A report from raw bytes: bounded JSON, signable, then the track's model.

    The canonical-JSON check runs here, at acceptance, so a report that is
    stored can always be signed: NFC-colliding keys, lone surrogates, huge
    integers and non-finite numbers make the report malformed instead of
    failing an attestation (or a round) later.
    """
    try:
        data = parse_bounded(raw, max_bytes=max_bytes)
        canonical_bytes(data)
    except (JsonLimitError, CanonicalError) as exc:
        raise ReportError(str(exc)) from exc
    return validate_report(data, track, max_items=max_items)
