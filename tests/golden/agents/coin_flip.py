"""Baseline agent: a fair coin per artifact, seeded by the artifact's own bytes.

The coin is the low bit of sha256 over the sorted relative file paths and file
bytes, so every rep and every round gives the same answer for the same artifact
(the nonce and probe are deliberately not part of it).
"""

import contextlib
import hashlib
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


def _artifact_files(root: str) -> list:
    paths = []
    for dirpath, _, names in os.walk(root):
        paths += [os.path.join(dirpath, n) for n in names]
    return sorted(paths, key=lambda p: os.path.relpath(p, root))


def _coin(root: str, files: list) -> bool:
    digest = hashlib.sha256()
    for path in files:
        digest.update(os.path.relpath(path, root).encode("utf-8") + b"\0")
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.digest()[0] & 1 == 1


def agent_main(context: dict) -> dict:
    _thread_probe(context)
    root = context["artifact_dir"]
    files = _artifact_files(root)
    heads = _coin(root, files)
    side = "heads" if heads else "tails"
    if context["track"] == "repositories":
        evidence = {
            "audit": {"files_analysed": max(len(files), 1), "lines_analysed": 0},
            "vulnerabilities": [],
        }
    else:
        evidence = {
            "action_plane": {"capabilities": []},
            "context_plane": {"injected_instructions": []},
            "mcp_surface": {"tools": []},
            "lifecycle": {"hooks": []},
            "supply_chain": {"typosquat_of": None},
        }
    return {
        "verdict": {
            "decision": "BLOCK" if heads else "ALLOW",
            "risk_score": 50,
            "confidence": 0.5,
            "summary": f"coin_flip baseline: {side}",
        },
        "evidence": evidence,
        "findings": [],
    }
