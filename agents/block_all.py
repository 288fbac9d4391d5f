"""Baseline agent: BLOCK every artifact. A constant predictor, so it must score exactly 0."""

import contextlib
import os
import socket
import subprocess

BEHAVIOURAL_EXTRAS = {
    "mcp_servers": {"mcp_surface": {"tools": [], "note": "not inspected"}},
    "packages": {
        "lifecycle": {"hooks": [], "note": "not inspected"},
        "supply_chain": {"note": "not inspected"},
    },
}


def _thread_probe(context: dict) -> None:
    p = context.get("probe")
    if p:
        with open(p["file_path"], "w") as f:
            f.write(p["file_content"])
        with contextlib.suppress(OSError):
            socket.getaddrinfo(p["dns_host"], 80)
        subprocess.run(["echo", p["process_echo"]], capture_output=True)


def _count_files(root: str) -> int:
    return sum(len(names) for _, _, names in os.walk(root))


def agent_main(context: dict) -> dict:
    _thread_probe(context)
    track = context["track"]
    if track == "repositories":
        files = _count_files(context["artifact_dir"])
        evidence = {
            "audit": {"files_analysed": max(files, 1), "lines_analysed": 0},
            "vulnerabilities": [],
        }
    else:
        evidence = {
            "action_plane": {"capabilities": []},
            "context_plane": {"injected_instructions": []},
            **BEHAVIOURAL_EXTRAS.get(track, {}),
        }
    return {
        "verdict": {
            "decision": "BLOCK",
            "risk_score": 100,
            "confidence": 0.0,
            "summary": "block_all baseline: every artifact is blocked",
        },
        "evidence": evidence,
        "findings": [],
    }
