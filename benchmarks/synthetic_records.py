"""Synthetic rep records for benchmarks and the example file.

Each agent has a skill in [0, 1]: the chance that a rep's verdict is right and
that a planted flaw or expected finding is reported. Deterministic per seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from typing import Any

TRACK_TASKS = {"skills": 50, "mcp_servers": 40, "packages": 30, "repositories": 50}
TRACK_REPS = {"skills": 3, "mcp_servers": 3, "packages": 3, "repositories": 2}
CWES = ["CWE-89", "CWE-78", "CWE-22", "CWE-918", "CWE-502", "CWE-79", "CWE-798"]


def agent_id(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _finding(rng: random.Random, task: str) -> dict[str, Any]:
    kind = rng.choice(["credential theft", "remote code execution", "prompt injection"])
    return {
        "category": kind.replace(" ", "_"),
        "file": f"scripts/{task}.py",
        "line": rng.randint(1, 80),
        "title": f"{kind} in helper script",
        "plane": "action",
    }


def _vulnerability(rng: random.Random, task: str) -> dict[str, Any]:
    return {
        "file": f"src/{task}/app.py",
        "line": rng.randint(1, 200),
        "cwe": rng.choice(CWES),
        "title": "untrusted input reaches a dangerous sink",
    }


def _tasks(rng: random.Random, track: str, count: int) -> list[dict[str, Any]]:
    tasks = []
    for i in range(count):
        task = f"{track}-{i:04d}"
        malicious = i % 2 == 0
        truth: dict[str, Any] = {"task": task, "label": "malicious" if malicious else "safe"}
        if track == "repositories":
            planted = [
                _vulnerability(rng, task) for _ in range(rng.randint(0, 3) if malicious else 0)
            ]
            truth["planted"] = planted
        else:
            truth["expected_findings"] = [_finding(rng, task)] if malicious else []
        tasks.append(truth)
    return tasks


def _near(rng: random.Random, item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "line": item["line"] + rng.randint(-4, 4)}


def _rep(
    rng: random.Random, agent: str, skill: float, track: str, truth: dict[str, Any], rep: int
) -> dict[str, Any]:
    record: dict[str, Any] = {"agent": agent, "track": track, "rep": rep, **truth}
    if rng.random() < 0.03:
        return {**record, "status": "failed", "reason": rng.choice(["cpu_budget", "crash"])}
    record["status"] = "completed"
    hit = rng.random() < skill
    if track == "repositories":
        found = [_near(rng, v) for v in truth["planted"] if rng.random() < skill]
        noise = [_vulnerability(rng, truth["task"]) for _ in range(rng.random() < 1 - skill)]
        record["vulnerabilities"] = found + noise
        return record
    flag = (truth["label"] == "malicious") == hit
    record["verdict"] = ("BLOCK" if rng.random() < 0.7 else "WARN") if flag else "ALLOW"
    record["findings"] = [_near(rng, f) for f in truth["expected_findings"] if hit]
    return record


def generate(agents: int, seed: int = 7, scale: float = 1.0) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    names = [(agent_id(f"agent-{a}"), rng.random()) for a in range(agents)]
    for track, count in TRACK_TASKS.items():
        for truth in _tasks(rng, track, max(2, int(count * scale))):
            for agent, skill in names:
                for rep in range(TRACK_REPS[track]):
                    yield _rep(rng, agent, skill, track, truth, rep)


def write(path: str, agents: int, seed: int = 7, scale: float = 1.0) -> int:
    n = 0
    with open(path, "w") as handle:
        for record in generate(agents, seed, scale):
            handle.write(json.dumps(record, separators=(",", ":")) + "\n")
            n += 1
    return n
