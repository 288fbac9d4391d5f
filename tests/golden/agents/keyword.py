"""Baseline agent: a naive static keyword scanner over the artifact's text.

It greps for suspicious words and regex sinks, line by line, with no notion of
data flow or intent. It is meant to be beaten: it blocks the security-teaching
skill and the SDK helper just as readily as real malware, and it never sees what
only runs behind a trigger it cannot read.
"""

import contextlib
import os
import re
import socket
import subprocess

MAX_FILE_BYTES = 512 * 1024
MAX_ITEMS = 64

# (pattern, capability, category, weight): weight 3 is enough to block on its own.
BEHAVIOUR_RULES = [
    (re.compile(r"\.ssh/|id_rsa|\"\.ssh\""), "READ_SSH_KEY", "credential_theft", 3),
    (re.compile(r"\.aws/credentials|\"\.aws\""), "READ_CLOUD_CREDENTIALS", "credential_theft", 3),
    (re.compile(r"git-credentials|\.netrc"), "READ_SECRET", "credential_theft", 3),
    (re.compile(r"os\.environ|process\.env"), "READ_ENV", "environment_access", 1),
    (re.compile(r"TOKEN|SECRET|API_KEY|PASSWORD", re.I), "READ_ENV_SECRET", "secret_keyword", 1),
    (
        re.compile(r"\.bashrc|\.profile|\.zshrc|PROMPT_COMMAND"),
        "WRITE_SHELL_PROFILE",
        "persistence",
        3,
    ),
    (re.compile(r"systemd/user|crontab"), "SCHEDULE_JOB", "persistence", 3),
    (
        re.compile(r"\"sh\", \"-c\"|\bexec(Sync)?\(|os\.system|shell=True"),
        "EXEC_SHELL",
        "command_execution",
        2,
    ),
    (re.compile(r"curl [^\n]*\| *sh"), "EXEC_SHELL", "remote_code", 3),
    (re.compile(r"\beval\(|\bexec\(|base64\.b64decode"), "EVAL_CODE", "obfuscation", 2),
    (
        re.compile(r"socket\.create_connection|net\.connect|urlopen|axios|fetch\("),
        "OPEN_SOCKET",
        "network",
        1,
    ),
    (re.compile(r"203\.0\.113\.|\.invalid\b|exfil", re.I), "EXFILTRATE_DATA", "exfiltration", 3),
]
CONTEXT_RULES = [
    (re.compile(r"ignore (all |any )?(previous|earlier|prior) instructions", re.I), "override"),
    (re.compile(r"<IMPORTANT>|do not mention|never mention", re.I), "concealed_instruction"),
    (re.compile(r"<!--"), "html_comment"),
    (re.compile("[\u200b-\u200f\u2060\U000e0000-\U000e007f]"), "hidden_unicode"),
]
INSTALL_HOOKS = re.compile(r"\"(preinstall|install|postinstall|prepare)\"\s*:|cmdclass")
POPULAR = ["requests", "colorama", "lodash", "electron", "express", "python-dateutil", "numpy"]

# (pattern, CWE, title) for the repository audit.
SINK_RULES = [
    (re.compile(r"(execute|query)\(\s*(f[\"']|[\"'][^\"']*[\"']\s*\+)"), "CWE-89", "SQL injection"),
    (re.compile(r"os\.system\(|shell=True|\bexec\(`"), "CWE-78", "Command injection"),
    (
        re.compile(r"send_file\(os\.path\.join|readFile\(path\.join\([^)]*req\."),
        "CWE-22",
        "Path traversal",
    ),
    (
        re.compile(r"requests\.get\((url|request)|axios\.get\(req\.|fetch\(req\."),
        "CWE-918",
        "Server-side request forgery",
    ),
    (
        re.compile(r"pickle\.loads?\(|yaml\.load\((?!.*SafeLoader)"),
        "CWE-502",
        "Unsafe deserialisation",
    ),
    (
        re.compile(r"innerHTML\s*=|mark_safe\(|res\.send\(`[^`]*\$\{req\."),
        "CWE-79",
        "Cross-site scripting",
    ),
    (
        re.compile(r"(KEY|SECRET|TOKEN|PASSWORD)\w*\"?\]?\s*=\s*[\"'][^\"']{16,}[\"']", re.I),
        "CWE-798",
        "Hard-coded secret",
    ),
]


def _thread_probe(context: dict) -> None:
    p = context.get("probe")
    if p:
        with open(p["file_path"], "w") as f:
            f.write(p["file_content"])
        with contextlib.suppress(OSError):
            socket.getaddrinfo(p["dns_host"], 80)
        subprocess.run(["echo", p["process_echo"]], capture_output=True)


def _text_files(root: str):
    """Yield (relative path, lines) for every readable file, in a stable order."""
    for dirpath, dirnames, names in os.walk(root):
        dirnames.sort()
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or os.path.getsize(path) > MAX_FILE_BYTES:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                yield os.path.relpath(path, root), handle.read().splitlines()


def _edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _typosquat_of(files: list) -> str | None:
    names = re.findall(
        r"name\s*[=:]\s*[\"']([\w.-]+)[\"']",
        "\n".join(
            "\n".join(lines)
            for rel, lines in files
            if rel in ("setup.py", "pyproject.toml", "package.json")
        ),
    )
    for name in names:
        for popular in POPULAR:
            if name != popular and _edit_distance(name.lower(), popular) <= 2:
                return popular
    return None


def _scan_behaviour(files: list) -> tuple[list, list, list, int]:
    capabilities, injected, findings, score = [], [], [], 0
    seen = set()
    for rel, lines in files:
        for number, line in enumerate(lines, 1):
            for pattern, capability, category, weight in BEHAVIOUR_RULES:
                if pattern.search(line) and (capability, rel) not in seen:
                    seen.add((capability, rel))
                    score += weight
                    capabilities.append(
                        {"capability": capability, "evidence_ref": f"{rel}:{number}"}
                    )
                    findings.append(
                        {
                            "category": category,
                            "severity": "HIGH" if weight >= 3 else "LOW",
                            "plane": "action",
                            "file": rel,
                            "line": number,
                            "title": f"Keyword suggests {capability.lower().replace('_', ' ')}",
                        }
                    )
            for pattern, technique in CONTEXT_RULES:
                if pattern.search(line):
                    score += 2
                    injected.append(
                        {
                            "file": rel,
                            "line": number,
                            "technique": technique,
                            "excerpt": line.strip()[:120],
                        }
                    )
                    findings.append(
                        {
                            "category": "prompt_injection",
                            "severity": "HIGH",
                            "plane": "context",
                            "file": rel,
                            "line": number,
                            "title": f"Possible injected instruction ({technique})",
                        }
                    )
    return capabilities[:MAX_ITEMS], injected[:MAX_ITEMS], findings, score


def _behavioural_report(track: str, files: list) -> dict:
    capabilities, injected, findings, score = _scan_behaviour(files)
    evidence = {
        "action_plane": {"capabilities": capabilities},
        "context_plane": {"injected_instructions": injected},
    }
    if track == "mcp_servers":
        tools = sorted(
            {
                m
                for _, lines in files
                for line in lines
                for m in re.findall(r"\"name\": \"(\w+)\"", line)
            }
        )
        evidence["mcp_surface"] = {"tools": [{"name": t} for t in tools]}
    if track == "packages":
        hooks = [
            f"{rel}:{n}"
            for rel, lines in files
            for n, line in enumerate(lines, 1)
            if INSTALL_HOOKS.search(line)
        ]
        squat = _typosquat_of(files)
        score += 2 * len(hooks) + (3 if squat else 0)
        evidence["lifecycle"] = {"hooks": hooks}
        evidence["supply_chain"] = {"typosquat_of": squat}
        if squat:
            findings.append(
                {
                    "category": "typosquat",
                    "severity": "HIGH",
                    "plane": "action",
                    "title": f"Package name resembles {squat}",
                }
            )
    decision = "BLOCK" if score >= 6 else "WARN" if score >= 3 else "ALLOW"
    return {
        "verdict": {
            "decision": decision,
            "risk_score": min(100, score * 10),
            "confidence": 0.4,
            "summary": f"keyword score {score}",
        },
        "evidence": evidence,
        "findings": findings[:MAX_ITEMS],
    }


def _repository_report(files: list) -> dict:
    vulnerabilities = []
    for rel, lines in files:
        for number, line in enumerate(lines, 1):
            for pattern, cwe, title in SINK_RULES:
                if pattern.search(line):
                    vulnerabilities.append(
                        {
                            "file": rel,
                            "line": number,
                            "cwe": cwe,
                            "title": title,
                            "description": line.strip()[:160],
                        }
                    )
    vulnerabilities = vulnerabilities[:MAX_ITEMS]
    decision = "BLOCK" if vulnerabilities else "ALLOW"
    return {
        "verdict": {
            "decision": decision,
            "risk_score": min(100, 25 * len(vulnerabilities)),
            "confidence": 0.4,
            "summary": f"{len(vulnerabilities)} sink(s) matched",
        },
        "evidence": {
            "audit": {
                "files_analysed": max(len(files), 1),
                "lines_analysed": sum(len(lines) for _, lines in files),
            },
            "vulnerabilities": vulnerabilities,
        },
        "findings": [
            {
                "category": v["title"],
                "severity": "HIGH",
                "plane": "action",
                "file": v["file"],
                "line": v["line"],
                "title": v["title"],
            }
            for v in vulnerabilities
        ],
    }


def agent_main(context: dict) -> dict:
    _thread_probe(context)
    files = list(_text_files(context["artifact_dir"]))
    if context["track"] == "repositories":
        return _repository_report(files)
    return _behavioural_report(context["track"], files)
