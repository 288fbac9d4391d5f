"""SARIF 2.1.0 for code-scanning users: each agent's findings, one run per agent.

A result is one finding (behavioural tracks) or one vulnerability
(repositories) from the rep that speaks for the task (the lowest-numbered rep
agreeing with the consensus), located at `<track>/<task>/<file>` relative to
the corpus. Checked in the test suite against the official OASIS schema.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any, ClassVar
from urllib.parse import quote

from assay import __version__
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import Track
from assay.records.rep import RepRecord
from assay.records.round import RoundResult
from assay.report.interface import ReportFormat
from assay.report.text import printable

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_LEVELS = {"CRIT": "error", "HIGH": "error", "MED": "warning", "LOW": "note"}
_CWE = re.compile(r"(\d+)")


Item = FindingItem | VulnerabilityItem


def _rule_id(item: Item) -> str:
    if isinstance(item, VulnerabilityItem):
        number = _CWE.search(str(item.cwe or ""))
        if number:
            return f"CWE-{int(number.group(1))}"
        return "finding"
    return printable(str(item.category or "finding"), 80) or "finding"


def _inside_task(file: str) -> str | None:
    """The agent's file as a normalised path inside the task's artifact ("" for the task
    root), or None when it climbs out of it (`../../.github/workflows/release.yml`): a
    code-scanning tool must never be pointed at the repository's own files. (`posixpath.
    normpath` keeps a leading `..`, and swallows one above `/`: the climb is counted here.)"""
    kept: list[str] = []
    for part in file.replace("\\", "/").split("/"):
        if part == "..":
            if not kept:
                return None
            kept.pop()
        elif part not in ("", "."):
            kept.append(part)
    return "/".join(kept)


def _location(record: RepRecord, item: Item) -> list[dict[str, Any]]:
    """The item's place as `<track>/<task>/<file>`; a file outside the task is clamped to
    the task root (and its line dropped), the reason kept in the location's message."""
    file = _inside_task(str(item.file or ""))
    parts = [quote(record.track.value, safe=""), quote(record.task, safe="")]
    parts += [quote(file, safe="/")] if file else []
    physical: dict[str, Any] = {"artifactLocation": {"uri": "/".join(parts)}}
    line = item.line
    if file is not None and isinstance(line, int) and not isinstance(line, bool) and line >= 1:
        physical["region"] = {"startLine": line}
    location: dict[str, Any] = {"physicalLocation": physical}
    if file is None:
        location["message"] = {
            "text": printable(f"reported outside the task, shown at its root: {item.file}", 300)
        }
    return [location]


def _result(record: RepRecord, item: Item) -> dict[str, Any]:
    severity = str(item.severity or "").upper()
    described = item.description if isinstance(item, VulnerabilityItem) else None
    title = printable(str(item.title or described or "finding"), 500)
    return {
        "ruleId": _rule_id(item),
        "level": _LEVELS.get(
            {"MEDIUM": "MED", "CRITICAL": "CRIT"}.get(severity, severity), "warning"
        ),
        "message": {"text": title or "finding"},
        "locations": _location(record, item),
        "properties": {"track": record.track.value, "task": record.task, "rep": record.rep},
    }


def _invocation(result: RoundResult) -> dict[str, Any]:
    """Whether the round ran whole; each track the validator abstained on is an error
    notification (its tasks have no results here)."""
    notes = [
        {
            "level": "error",
            "message": {"text": printable(f"abstained on the {track} track: {why}", 600)},
            "properties": {"track": track},
        }
        for track, why in result.abstained_tracks.items()
    ]
    ran_whole = result.status == "completed" and not notes
    return {"executionSuccessful": ran_whole, "toolExecutionNotifications": notes}


def _run(result: RoundResult, agent: str, reps: list[RepRecord]) -> dict[str, Any]:
    results = []
    for record in reps:
        items: tuple[Item, ...] = (
            record.vulnerabilities if record.track is Track.REPOSITORIES else record.findings
        )
        results += [_result(record, item) for item in items]
    rules = sorted({r["ruleId"] for r in results})
    return {
        "tool": {
            "driver": {
                "name": printable(result.agents.get(agent, "agent"), 100) or "agent",
                "version": agent,
                "rules": [{"id": rule} for rule in rules],
            }
        },
        "automationDetails": {"id": f"{result.round_id}/{agent}"},
        "invocations": [_invocation(result)],
        "properties": {"validator": f"assay {__version__}", "round": result.round_id},
        "results": results,
    }


def render_sarif(result: RoundResult) -> dict[str, Any]:
    by_agent: dict[str, list[RepRecord]] = defaultdict(list)
    speaking = result.speaking
    for key in sorted(speaking):
        by_agent[key[0]].append(speaking[key])
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [_run(result, agent, by_agent[agent]) for agent in sorted(result.agents)],
    }


class SarifFormat(ReportFormat):
    name: ClassVar[str] = "sarif"
    suffix: ClassVar[str] = ".sarif"

    def render(self, result: RoundResult) -> str:
        return json.dumps(render_sarif(result), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
