"""Realistic round results for the report tests, built from synthetic rep records.

No sandbox runs: the records come from `benchmarks/synthetic_records.py` and go
through the real scorecard, so the report sees exactly what a round produces.
Some names, task ids and failure reasons are hostile on purpose.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import Track
from assay.mechanism.weights import ema
from assay.records.diagnostics import diagnose
from assay.records.observed import UNTRUSTED_NOTE, CapabilityRecord, EvidenceRecord, Observed
from assay.records.plan import PlannedTask, RoundPlan
from assay.records.rep import parse_lines
from assay.records.round import RoundResult
from assay.schema.mechanism_file import pinned
from assay.validator.scoring import scorecard, speaking_reps, task_matching

SPEC = pinned()

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_REASON = '"><img src=x onerror=alert(2)>'
HOSTILE_TASK = "skills-0001<b>bold</b>"
HOSTILE_DETAIL = "agent raised: KeyError: '<svg onload=alert(3)>'"
LONG_NAME = "an-agent-with-a-remarkably-long-name-" * 4
STALE_AGENT = "f" * 64  # only in the previous weight vector


def _synthetic() -> Any:
    spec = importlib.util.spec_from_file_location(
        "synthetic_records", ROOT / "benchmarks" / "synthetic_records.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SYNTHETIC = _synthetic()


def _hostile(records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Rename one task and give some failed reps a reason written by an attacker."""
    for i, record in enumerate(records):
        if record["task"] == "skills-0001":
            record = {**record, "task": HOSTILE_TASK}
        if record["status"] == "failed" and i % 2:
            record = {**record, "reason": HOSTILE_REASON}
        if record["status"] == "failed":
            record = {**record, "detail": HOSTILE_DETAIL, "cpu_s": 0.25}
        yield record


def _unrun(
    records: Iterator[dict[str, Any]], refused: dict[str, dict[str, str]]
) -> Iterator[dict[str, Any]]:
    """A refused agent's reps on its refused tracks, as the engine records them: failed
    without running, `agent_invalid`, the refusal as the detail."""
    for record in records:
        why = refused.get(record["agent"], {}).get(record["track"])
        if why is None:
            yield record
            continue
        kept = {
            k: v for k, v in record.items() if k not in ("verdict", "findings", "vulnerabilities")
        }
        yield {**kept, "status": "failed", "reason": "agent_invalid", "detail": why}


def _plan(records: list[dict[str, Any]], agents: list[str]) -> RoundPlan:
    spec = pinned()
    tasks: dict[tuple[str, str], PlannedTask] = {}
    for r in records:
        tasks.setdefault(
            (r["track"], r["task"]),
            PlannedTask(
                track=Track(r["track"]),
                task_id=r["task"],
                label=r["label"],
                artifact_dir="/nonexistent",
                artifact_digest="0" * 64,
                expected_findings=tuple(map(FindingItem.of, r.get("expected_findings", ()))),
                planted=tuple(map(VulnerabilityItem.of, r.get("planted", ()))),
            ),
        )
    tracks = sorted({Track(r["track"]) for r in records}, key=list(Track).index)
    return RoundPlan(
        round_seed="5eed" * 8,
        validator_id="validator-<i>0</i>",
        mechanism_version=spec.version,
        mechanism_digest=spec.digest,
        corpus="/corpus",
        reps={t: SYNTHETIC.TRACK_REPS[t.value] for t in tracks},
        tasks=tuple(tasks.values()),
        agents=tuple(sorted(agents)),
    )


HOSTILE_EVIDENCE = "/home/<img src=x onerror=alert(4)>/.ssh/id_rsa"


def observed_of(track: str) -> Observed:
    """A detonation that saw the artifact read a key and call out (hostile paths on purpose)."""
    return Observed(
        track=Track(track),
        capabilities=(
            CapabilityRecord(
                capability="credential_read",
                group="secrets",
                protection="canary",
                profiles=("baseline",),
                evidence=(
                    EvidenceRecord(
                        event="reads", profile="baseline", source="trace", path=HOSTILE_EVIDENCE
                    ),
                ),
            ),
            CapabilityRecord(
                capability="network_egress",
                group="network",
                protection="sink",
                profiles=("baseline", "ci"),
                evidence=(
                    EvidenceRecord(
                        event="connects", profile="ci", source="trace", peer="203.0.113.7:443"
                    ),
                ),
            ),
        ),
        gated={"network_egress": ("ci",)},
        profiles=(),
        events={"reads": (HOSTILE_EVIDENCE,)},
        notes=(),
        complete=True,
        interference=(),
        untrusted=UNTRUSTED_NOTE,
    )


def build_result(
    agents: int = 5,
    scale: float = 0.3,
    *,
    tracks: tuple[str, ...] | None = None,
    seed: int = 3,
    refused: dict[int, dict[str, str]] | None = None,
) -> RoundResult:
    """A completed round over `agents` synthetic agents (the first few hostile-named);
    `refused` maps an agent's index to the tracks it was refused on, with why."""
    hashes = [SYNTHETIC.agent_id(f"agent-{a}") for a in range(agents)]
    refusals = {hashes[i]: why for i, why in (refused or {}).items()}
    raw = [
        r
        for r in _unrun(_hostile(SYNTHETIC.generate(agents, seed, scale)), refusals)
        if tracks is None or r["track"] in tracks
    ]
    names = {h: f"agent-{i}" for i, h in enumerate(hashes)}
    for special, h in zip((HOSTILE_NAME, LONG_NAME), hashes[1:], strict=False):
        names[h] = special
    records = list(parse_lines(json.dumps(r) for r in raw))
    card = scorecard(records, salt="5eed" * 8, spec=SPEC)
    plan = msgspec.structs.replace(_plan(raw, hashes), refused=refusals)
    speaking = speaking_reps(records)
    return RoundResult(
        round_id="r-0007",
        status="completed",
        reason=None,
        plan=plan,
        agents=names,
        card=card,
        weights=ema(card.weights, {STALE_AGENT: 1.0}, spec=SPEC),
        round_weights=card.weights,
        diagnostics=diagnose(records, SPEC),
        records=tuple(records),
        speaking=speaking,
        matching=task_matching(records, speaking, SPEC),
        observed={(t.track.value, t.task_id): observed_of(t.track.value) for t in plan.tasks},
    )


def abstained_result() -> RoundResult:
    done = build_result(agents=3, scale=0.1)
    return RoundResult(
        round_id="r-0008",
        status="abstained",
        reason=f"InfrastructureError: sandbox unsound {HOSTILE_NAME}",
        plan=done.plan,
        agents=done.agents,
        card=None,
        weights={},
        round_weights={},
    )
