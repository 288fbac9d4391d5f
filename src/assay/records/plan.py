"""A round's plan as data: the seeded task draw and the pinned agents, fixed before any
rep runs and stored whole, so a resumed round runs against exactly the tasks, truth and
agent code that the interrupted one drew. (`assay.validator.planning` makes it.)
"""

from __future__ import annotations

from typing import Any

import msgspec

from assay.mechanism.draw import chain_round_seed, draw_seed
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import MechanismSpec, Track
from assay.records import codec
from assay.schema.inference import InferenceConfig
from assay.schema.manifest import AgentManifest


class PlannedTask(msgspec.Struct, frozen=True):
    track: Track
    task_id: str
    label: str
    artifact_dir: str
    artifact_digest: str
    expected_findings: tuple[FindingItem, ...]
    planted: tuple[VulnerabilityItem, ...]
    # The corpus artifact's digest when the round runs a variant of it (artifact_digest
    # is then the variant's, what agents were shown and attestations name); kept so an
    # audit can tie the variant to its original. The labels' lines are the variant's.
    original_digest: str | None = None


class SharedDraw(msgspec.Struct, frozen=True):
    """Where a chain-mode round's seed comes from, so anyone can recompute its draw:
    the subnet's anchor block (its last epoch) and that block's hash, and the digest
    of the corpus the tasks were drawn from (`corpus.interface.corpus_digest`)."""

    netuid: int
    anchor_block: int
    block_hash: str
    corpus_digest: str

    @property
    def round_seed(self) -> str:
        return chain_round_seed(self.block_hash, self.corpus_digest)


class RoundPlan(msgspec.Struct, frozen=True):
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
    refused: dict[str, dict[str, str]] = {}
    manifests: dict[str, AgentManifest] = {}  # hash -> verified manifest
    # hash -> track -> the admitted manifest entering it: one owner may enter the same
    # code on several tracks (identity is owner and track, the code is run once per task).
    entries: dict[str, dict[str, AgentManifest]] = {}
    # Agent hashes in the order the validator first saw them: behavioural screening pays
    # the earliest of agents whose reports are identical.
    arrival_order: tuple[str, ...] = ()
    # The round's upstream model (the `[inference]` table, never a key) and the model
    # each agent is served: the one its manifest names when the round allows it.
    inference: InferenceConfig | None = None
    models: dict[str, str] = {}
    # A chain-mode round's shared draw (its seed is the chain's, every validator draws
    # alike); None for a local round, whose draw is this validator's own.
    shared: SharedDraw | None = None
    # Whether each artifact is the round's variant (docs/round-config.md, `variants`).
    variants: bool = False

    @property
    def draw_validator(self) -> str | None:
        """The validator id the draw hangs from: none for a shared draw."""
        return None if self.shared else self.validator_id

    def to_json(self) -> dict[str, Any]:
        """The plan as stored, with the draw seed anyone can recompute beside it."""
        data: dict[str, Any] = codec.to_builtins(self)
        return data | {"draw_seed": draw_seed(self.round_seed, self.draw_validator)}

    @classmethod
    def from_json(cls, data: object) -> RoundPlan:
        return codec.convert(data, cls)

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

    def owner(self, agent_hash: str) -> str:
        """Who submitted the agent: its manifest's key, else the agent itself."""
        manifest = self.manifests.get(agent_hash)
        return manifest.author_key if manifest else agent_hash

    def refusal(self, agent_hash: str, track: Track) -> str | None:
        return self.refused.get(agent_hash, {}).get(track.value)

    def refused_on(self, track: str) -> dict[str, str]:
        """Agent hash -> why, for every agent refused on `track`."""
        return {a: why[track] for a, why in sorted(self.refused.items()) if track in why}

    def draw(self) -> dict[str, list[str]]:
        order: dict[str, list[str]] = {t.value: [] for t in self.reps}
        for task in self.tasks:
            order[task.track.value].append(task.task_id)
        return order
