"""Baseline agent: ALLOW every artifact. A constant predictor, so it must score exactly 0."""

import contextlib
import os
import socket
import subprocess


def _thread_probe(context: dict) -> None:
    p = context.get("probe")
    if p:
        with open(p["file_path"], "w") as f:
            f.write(p["file_content"])
        with contextlib.suppress(OSError):
            socket.getaddrinfo(p["dns_host"], 80)
        subprocess.run(["echo", p["process_echo"]], capture_output=True)


def _evidence(track: str, artifact_dir: str) -> dict:
    if track == "repositories":
        files = lines = 0
        for dirpath, _, names in os.walk(artifact_dir):
            for name in names:
                files += 1
                with open(os.path.join(dirpath, name), "rb") as handle:
                    lines += handle.read().count(b"\n")
        return {
            "audit": {"files_analysed": max(files, 1), "lines_analysed": lines},
            "vulnerabilities": [],
        }
    evidence: dict = {
        "action_plane": {"capabilities": []},
        "context_plane": {"injected_instructions": []},
    }
    if track == "mcp_servers":
        evidence["mcp_surface"] = {"tools": []}
    if track == "packages":
        evidence["lifecycle"] = {"hooks": []}
        evidence["supply_chain"] = {"typosquat_of": None}
    return evidence


def agent_main(context: dict) -> dict:
    _thread_probe(context)
    return {
        "verdict": {
            "decision": "ALLOW",
            "risk_score": 0,
            "confidence": 0.0,
            "summary": "allow_all baseline: every artifact is allowed",
        },
        "evidence": _evidence(context["track"], context["artifact_dir"]),
        "findings": [],
    }
