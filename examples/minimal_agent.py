"""A minimal assay agent: completes every rep on every track, with a real (if small) analysis.

Copy it as the start of your own agent. It shows the three things every agent
does (docs/agents.md explains each):

1. the liveness probe on the behavioural tracks (skills, mcp_servers, packages);
2. a look at the artifact under `context["artifact_dir"]` (read-only);
3. a report with the evidence keys the track requires.

Standard library only; the sandbox has no network (the probe's DNS lookup is
seen by the validator's tracer even though it gets no answer).
"""

import contextlib
import os
import re
import socket
import subprocess

# Phrases aimed at the agent reading the artifact rather than at its user.
_INJECTION = re.compile(
    r"ignore (all |any )?(previous|prior) instructions|do not (tell|mention|inform) the user"
    r"|~/\.ssh|id_rsa|\.aws/credentials",
    re.IGNORECASE,
)
_MAX_BYTES = 256 * 1024  # read at most this much of any one file


def run_probe(context: dict) -> None:
    """Prove this rep really ran: the validator checks each part itself."""
    probe = context.get("probe")
    if not probe:  # repositories have no probe
        return
    with open(probe["file_path"], "w") as handle:
        handle.write(probe["file_content"])
    with contextlib.suppress(OSError):  # no answer comes back in the sandbox; the query counts
        socket.getaddrinfo(probe["dns_host"], 80)
    subprocess.run(["echo", probe["process_echo"]], capture_output=True, check=False)


def text_files(root: str):
    """(relative path, text) for every regular file, never following links."""
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                data = handle.read(_MAX_BYTES)
            yield os.path.relpath(path, root), data.decode("utf-8", "replace")


def behavioural_report(track: str, files: list) -> dict:
    injected = []
    for rel, text in files:
        for number, line in enumerate(text.splitlines(), start=1):
            if _INJECTION.search(line):
                injected.append({"file": rel, "line": number, "excerpt": line.strip()[:200]})
    decision = "BLOCK" if injected else "ALLOW"
    evidence = {
        "action_plane": {"capabilities": []},
        "context_plane": {"injected_instructions": injected[:64]},
    }
    if track == "mcp_servers":
        evidence["mcp_surface"] = {"exposed_tools": []}
    if track == "packages":
        evidence["lifecycle"] = {}
        evidence["supply_chain"] = {}
    findings = [
        {
            "category": "prompt_injection",
            "severity": "HIGH",
            "plane": "context",
            "title": "instruction aimed at the reading agent",
            "file": item["file"],
            "line": item["line"],
        }
        for item in injected[:8]
    ]
    return {"verdict": decision, "evidence": evidence, "findings": findings}


def repository_report(files: list) -> dict:
    vulnerabilities = []
    for rel, text in files:
        for number, line in enumerate(text.splitlines(), start=1):
            if re.search(r"\b(os\.system|subprocess\.\w+\(.*shell=True)", line):
                vulnerabilities.append(
                    {"file": rel, "line": number, "cwe": "CWE-78", "title": "OS command injection"}
                )
    lines = sum(text.count("\n") for _, text in files)
    return {
        "verdict": "WARN" if vulnerabilities else "ALLOW",
        "evidence": {
            "audit": {"files_analysed": max(1, len(files)), "lines_analysed": lines},
            "vulnerabilities": vulnerabilities[:64],
        },
    }


def agent_main(context: dict) -> dict:
    run_probe(context)
    files = list(text_files(context["artifact_dir"]))
    if context["track"] == "repositories":
        return repository_report(files)
    return behavioural_report(context["track"], files)
