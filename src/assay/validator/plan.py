"""A round's plan: the seeded task draw and the pinned agents, fixed before any rep runs.

The plan is stored whole before execution starts, so a resumed round runs
against exactly the tasks, truth and agent code that the interrupted one drew.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.corpus.draw import draw_seed, draw_tasks
from assay.corpus.interface import Task
from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import MechanismSpec, Track
from assay.runner.rep import DEFAULT_ENTRYPOINT
from assay.store.sqlite import StoredAgent
from assay.validator.snapshot import snapshot_artifact


class PlanError(ValueError):
    """The round cannot be planned as asked (bad corpus, agent, or flag)."""


@dataclass(frozen=True)
class PlannedTask:
    track: Track
    task_id: str
    label: str
    artifact_dir: str
    artifact_digest: str
    expected_findings: tuple[dict[str, Any], ...]
    planted: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "track": self.track.value,
            "task_id": self.task_id,
            "label": self.label,
            "artifact_dir": self.artifact_dir,
            "artifact_digest": self.artifact_digest,
            "expected_findings": list(self.expected_findings),
            "planted": list(self.planted),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlannedTask:
        return cls(
            track=Track(data["track"]),
            task_id=data["task_id"],
            label=data["label"],
            artifact_dir=data["artifact_dir"],
            artifact_digest=data["artifact_digest"],
            expected_findings=tuple(data["expected_findings"]),
            planted=tuple(data["planted"]),
        )


@dataclass(frozen=True)
class Plan:
    round_seed: str
    validator_id: str
    mechanism_version: str
    mechanism_digest: str
    corpus: str
    reps: dict[Track, int]
    tasks: tuple[PlannedTask, ...]
    agents: tuple[str, ...]  # agent hashes, sorted
    # Agents refused at intake (assay.attest.intake): hash -> track -> why. Their reps on
    # those tracks fail without running, so they score 0 with the reason recorded.
    refused: dict[str, dict[str, str]] = field(default_factory=dict)
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)  # hash -> signed manifest
    # The round's upstream model (`InferenceConfig` as JSON, never a key) and the model
    # each agent is served: the one its manifest names when the round allows it.
    inference: dict[str, Any] | None = None
    models: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "round_seed": self.round_seed,
            "validator_id": self.validator_id,
            "draw_seed": draw_seed(self.round_seed, self.validator_id),
            "mechanism_version": self.mechanism_version,
            "mechanism_digest": self.mechanism_digest,
            "corpus": self.corpus,
            "reps": {t.value: n for t, n in self.reps.items()},
            "tasks": [t.to_json() for t in self.tasks],
            "agents": list(self.agents),
            "refused": self.refused,
            "manifests": self.manifests,
            "inference": self.inference,
            "models": self.models,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(
            round_seed=data["round_seed"],
            validator_id=data["validator_id"],
            mechanism_version=data["mechanism_version"],
            mechanism_digest=data["mechanism_digest"],
            corpus=data["corpus"],
            reps={Track(t): int(n) for t, n in data["reps"].items()},
            tasks=tuple(PlannedTask.from_json(t) for t in data["tasks"]),
            agents=tuple(data["agents"]),
            refused=data.get("refused", {}),
            manifests=data.get("manifests", {}),
            inference=data.get("inference"),
            models=data.get("models", {}),
        )

    @property
    def tracks(self) -> tuple[Track, ...]:
        return tuple(self.reps)

    def refusal(self, agent_hash: str, track: Track) -> str | None:
        return self.refused.get(agent_hash, {}).get(track.value)

    def draw(self) -> dict[str, list[str]]:
        order: dict[str, list[str]] = {t.value: [] for t in self.reps}
        for task in self.tasks:
            order[task.track.value].append(task.task_id)
        return order


def _planned(task: Task, snapshots: Path) -> PlannedTask:
    """The task as the round will run it: its artifact is the snapshot taken now."""
    copy = snapshots / task.track.value / task.task_id
    return PlannedTask(
        track=task.track,
        task_id=task.task_id,
        label=task.label.value,
        artifact_dir=str(copy),
        artifact_digest=snapshot_artifact(task.artifact_dir, copy),
        expected_findings=tuple(_plain(f) for f in task.expected_findings),
        planted=tuple(_plain(v) for v in task.vulnerabilities),
    )


def _plain(item: object) -> dict[str, Any]:
    fields = getattr(item, "__dataclass_fields__", {})
    return {name: getattr(item, name) for name in fields if getattr(item, name) is not None}


def load_agent(path: Path, entrypoint: str = DEFAULT_ENTRYPOINT) -> StoredAgent:
    """Pin an agent file by the SHA-256 of its bytes (the size cap is a gate at run time)."""
    try:
        code = path.read_bytes()
    except OSError as exc:
        raise PlanError(f"agent {path}: {exc.strerror}") from exc
    return StoredAgent(hashlib.sha256(code).hexdigest(), path.stem, entrypoint, code)


def make_plan(
    *,
    corpus: Path,
    agents: Sequence[StoredAgent],
    tracks: Sequence[Track],
    round_seed: str,
    validator_id: str,
    spec: MechanismSpec,
    snapshots: Path,
    reps: int | None = None,
    draw_all: bool = False,
) -> Plan:
    """Draw each track's tasks (DESIGN §9), snapshot their artifacts under `snapshots`
    (what the round verifies, detonates and mounts) and pin the agents."""
    hashes = [a.agent_hash for a in agents]
    if len(set(hashes)) != len(hashes):
        raise PlanError("the same agent code is given twice (agents are identified by hash)")
    if not agents:
        raise PlanError("no agents to run")
    source = NativeCorpus(corpus)
    tasks: list[PlannedTask] = []
    for track in tracks:
        available = source.tasks(track)
        count = len(available) if draw_all else spec.track(track).tasks
        drawn = draw_tasks(
            available, track=track, round_seed=round_seed, validator_id=validator_id, count=count
        )
        tasks.extend(_planned(t, snapshots.resolve()) for t in drawn)
    return Plan(
        round_seed=round_seed,
        validator_id=validator_id,
        mechanism_version=spec.version,
        mechanism_digest=spec.digest,
        corpus=str(corpus.resolve()),
        reps={t: reps or spec.track(t).reps for t in tracks},
        tasks=tuple(tasks),
        agents=tuple(sorted(hashes)),
    )
