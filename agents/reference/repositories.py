"""Repositories: CI workflows, the audit across languages and its report."""

import re

from .behavioural import REPOSITORY_CODE_BYTES, _within_budget
from .common import MAX_FINDINGS, MAX_ITEMS, Source
from .repo_go import audit_go
from .repo_js import (
    JsTaint,
    js_secret_vulns,
    library_argument_js_vulns,
    path_setter_vulns,
    prototype_pollution_vulns,
)
from .repo_python import Vuln, audit_python

WORKFLOW_INJECTION = re.compile(
    r"\$\{\{\s*(?:github\.event\.(?:issue|pull_request|comment|review|review_comment|"
    r"head_commit|commits|discussion|pages|workflow_run)[\w.\[\]*]*\.(?:title|body|ref|label|"
    r"message|name|email|head_branch|default_branch)|github\.head_ref)\s*\}\}"
)


def audit_workflow(source: Source) -> list[Vuln]:
    """`${{ github.event.* }}` spliced into a `run:` script is shell injection."""
    out = []
    run_indent: int | None = None
    for number, line in enumerate(source.lines, 1):
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if run_indent is not None and stripped and indent <= run_indent:
            run_indent = None
        run_key = re.match(r"-?\s*run\s*:\s*(.*)", stripped)
        if run_key:
            run_indent = indent
            if not WORKFLOW_INJECTION.search(run_key.group(1)):
                continue
        if run_indent is not None and WORKFLOW_INJECTION.search(line):
            out.append(
                Vuln(
                    source.rel,
                    number,
                    "CWE-78",
                    "GitHub Actions script injection",
                    "Attacker-controlled event text is expanded inside a run: shell script.",
                    "HIGH",
                    ("CWE-77", "CWE-94"),
                    scope=f"wf:{number}",
                )
            )
    return out[:8]


# Fixtures in tests hold fake credentials on purpose.
TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|fixtures|spec)/|(?:^|/)test_[^/]*$|_test\.\w+$|\.(?:spec|test)\.\w+$"
)


def audit_repository(files: list[Source]) -> list[Vuln]:
    vulns: list[Vuln] = []
    for source in files:
        try:
            test_file = bool(TEST_PATH.search(source.rel))
            if source.is_python:
                found = audit_python(source)
                vulns += [v for v in found if not (test_file and v.cwe == "CWE-798")]
            elif source.is_js:
                vulns += JsTaint(source).run()
                vulns += prototype_pollution_vulns(source) + path_setter_vulns(source)
                vulns += library_argument_js_vulns(source)
                vulns += [] if test_file else js_secret_vulns(source)
            elif source.suffix == ".go":
                vulns += [v for v in audit_go(source) if not (test_file and v.cwe == "CWE-798")]
            elif source.rel.startswith(".github/workflows/") and source.suffix in (".yml", ".yaml"):
                vulns += audit_workflow(source)
        except (RecursionError, ValueError, MemoryError):
            continue
    unique: dict[tuple[str, int, str], Vuln] = {}
    for vuln in vulns:
        unique.setdefault((vuln.file, vuln.line, vuln.cwe), vuln)
    ordered = sorted(unique.values(), key=lambda v: (v.file, v.line, v.cwe))
    return ordered[:MAX_ITEMS]


def repository_report(files: list[Source]) -> dict:
    vulns = audit_repository(_within_budget(files, REPOSITORY_CODE_BYTES))
    decision = "BLOCK" if len(vulns) >= 2 else "WARN" if vulns else "ALLOW"
    items = [v.as_dict() for v in vulns]
    findings = [
        {
            "category": v.title.lower().replace(" ", "_"),
            "severity": v.severity,
            "plane": "action",
            "title": v.title,
            "file": v.file,
            "line": v.line,
        }
        for v in vulns[:MAX_FINDINGS]
    ]
    summary = ", ".join(f"{v.cwe} {v.file}:{v.line}" for v in vulns[:6]) or "no vulnerability found"
    return {
        "verdict": {
            "decision": decision,
            "risk_score": min(100, 30 * len(vulns)),
            "confidence": 0.7 if vulns else 0.6,
            "summary": f"{decision}: {summary}"[:400],
        },
        "evidence": {
            "audit": {
                "files_analysed": max(1, len(files)),
                "lines_analysed": sum(len(s.lines) for s in files),
            },
            "vulnerabilities": items,
        },
        "findings": findings,
    }
