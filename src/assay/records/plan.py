"""A round's plan as data: the seeded task draw and the pinned agents, fixed before any
rep runs and stored whole, so a resumed round runs against exactly the tasks, truth and
agent code that the interrupted one drew. (`assay.validator.plan` makes it.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.mechanism.draw import draw_seed
from assay.mechanism.spec import MechanismSpec, Track
from assay.schema.inference import InferenceConfig
from assay.schema.manifest import AgentManifest


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
class RoundPlan:
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
    manifests: dict[str, AgentManifest] = field(default_factory=dict)  # hash -> verified manifest
    # The round's upstream model (`InferenceConfig` as JSON, never a key) and the model
    # each agent is served: the one its manifest names when the round allows it.
    inference: InferenceConfig | None = None
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
            "manifests": {h: m.model_dump(mode="json") for h, m in self.manifests.items()},
            "inference": self.inference.model_dump(mode="json") if self.inference else None,
            "models": self.models,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RoundPlan:
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
            manifests={
                h: AgentManifest.model_validate(m) for h, m in data.get("manifests", {}).items()
            },
            inference=InferenceConfig.from_table(data["inference"])
            if data.get("inference") is not None
            else None,
            models=data.get("models", {}),
        )

    @property
    def tracks(self) -> tuple[Track, ...]:
        return tuple(self.reps)

    def mechanism_mismatch(self, round_id: str, spec: MechanismSpec) -> str | None:
        """Why this round cannot be run, scored or attested under `spec`, if it cannot:
        every rule (reps, consensus, scoring) is the mechanism it was planned under."""
        if self.mechanism_digest == spec.digest:
            return None
        planned = self.mechanism_digest
        return f"round {round_id} was planned under mechanism {planned}, not {spec.digest}"

    def refusal(self, agent_hash: str, track: Track) -> str | None:
        return self.refused.get(agent_hash, {}).get(track.value)

    def draw(self) -> dict[str, list[str]]:
        order: dict[str, list[str]] = {t.value: [] for t in self.reps}
        for task in self.tasks:
            order[task.track.value].append(task.task_id)
        return order
