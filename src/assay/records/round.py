"""A round as its outputs read it: plan, agents, scores, weights and the records behind them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from assay.records.diagnostics import Diagnostics, InferenceTotals, RepDiagnostic
from assay.records.matching import MatchingKey, TaskMatching
from assay.records.observed import Observed
from assay.records.plan import RoundPlan
from assay.records.rep import RepRecord
from assay.records.scorecard import AgentTrackScore, Scorecard


@dataclass(frozen=True)
class RoundResult:
    round_id: str
    status: str
    reason: str | None
    plan: RoundPlan
    agents: dict[str, str]  # hash -> name
    card: Scorecard | None
    weights: dict[str, float]
    round_weights: dict[str, float]
    diagnostics: Diagnostics = field(default_factory=lambda: Diagnostics({}))
    # The rep records behind the scores: what formats that list findings read.
    records: tuple[RepRecord, ...] = ()
    kind: str = "round"  # "eval" when one agent was scored locally on one track
    # Written weights of the store's completed rounds, oldest first (for the report's chart).
    weight_history: tuple[tuple[str, dict[str, float]], ...] = ()
    # track -> why the validator abstained on it (an infrastructure fault confined to that
    # track): not scored, its emission share split as an idle track's, run again on resume.
    abstained_tracks: dict[str, str] = field(default_factory=dict)
    # "track/task" -> why its detonation was disturbed (`observed.interference`)
    incomplete_detonations: dict[str, list[str]] = field(default_factory=dict)
    # (track, task) -> the validator's own detonation of its artifact, as stored and given
    # to the agents (`context.observed`): what the views show beside expected and reported.
    observed: dict[tuple[str, str], Observed] = field(default_factory=dict)
    # (agent, track, task) -> the rep whose report stands for the task (the lowest-numbered
    # one agreeing with the consensus), and its report matched against the label, pair
    # by pair with each criterion's reason (`assay.validator.scoring.task_matching`).
    speaking: dict[MatchingKey, RepRecord] = field(default_factory=dict)
    matching: dict[MatchingKey, TaskMatching] = field(default_factory=dict)

    @property
    def refusals(self) -> dict[str, dict[str, str]]:
        """Agent hash -> track -> why it scores 0: refused at intake (the plan), or found
        a copy by its reports after the round (the scorecard)."""
        return merged_refusals(self.plan.refused, self.card)

    def refused_on(self, track: str) -> dict[str, str]:
        """Agent hash -> why, for every agent refused on `track` (`refusals`)."""
        return {a: why[track] for a, why in sorted(self.refusals.items()) if track in why}

    def ranked(self, track: str) -> dict[str, AgentTrackScore]:
        """The track's scores without its refused agents. A refused agent never ran, or
        ran as a copy: every view shows it once, as refused with the reason
        (`refused_on`), outside the ranking, never as an agent scoring MCC −1 with a
        column of failed reps."""
        scores = self.card.scores.get(track, {}) if self.card else {}
        refused = self.refused_on(track)
        return {a: s for a, s in scores.items() if a not in refused}

    def failed_reps(self) -> list[RepDiagnostic]:
        """Failed reps of the agents that ran: a refused agent's unrun reps are its refusal."""
        refused = self.refusals
        return [
            d for d in self.diagnostics.failed() if d.track.value not in refused.get(d.agent, {})
        ]

    def matching_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        """`matching` as JSON: track -> agent -> task -> `TaskMatching.to_json()`."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for (agent, track, task), m in sorted(self.matching.items()):
            out.setdefault(track, {}).setdefault(agent, {})[task] = m.to_json()
        return out

    def cost_text(self, totals: InferenceTotals) -> str | None:
        """What an agent's inference cost, by the round's `[inference.price]` (None unpriced)."""
        price = self.plan.inference.price if self.plan.inference else None
        return price.text(totals.prompt_tokens, totals.completion_tokens) if price else None

    def _usage_json(self) -> list[dict[str, Any]]:
        usage = []
        for totals in self.diagnostics.inference():
            entry = msgspec.to_builtins(totals)
            if (cost := self.cost_text(totals)) is not None:
                entry["cost"] = cost
            usage.append(entry)
        return usage

    def to_json(self) -> dict[str, Any]:
        card = self.card.to_json_dict() if self.card else {}
        failed = [msgspec.to_builtins(d) for d in self.diagnostics.failed()]
        return {
            "round_id": self.round_id,
            "status": self.status,
            "reason": self.reason,
            "abstained_tracks": self.abstained_tracks,
            "round_seed": self.plan.round_seed,
            "validator_id": self.plan.validator_id,
            "mechanism_version": self.plan.mechanism_version,
            "mechanism_digest": self.plan.mechanism_digest,
            "draw": self.plan.draw(),
            "agents": dict(sorted(self.agents.items())),
            "refused": self.refusals,
            "scores": card.get("scores", {}),
            "stability": card.get("stability", {}),
            "round_weights": self.round_weights,
            "weights": self.weights,
            # Beside the scores, not in them: CPU seconds differ from run to run.
            "failures": failed,
            "matching": self.matching_json(),
            "incomplete_detonations": self.incomplete_detonations,
            "inference": {
                "upstream": self.plan.inference.model_dump(mode="json")
                if self.plan.inference
                else None,
                "models": self.plan.models,
                "usage": self._usage_json(),
            },
        }


def merged_refusals(
    planned: Mapping[str, Mapping[str, str]], card: Scorecard | None
) -> dict[str, dict[str, str]]:
    """Agent hash -> track -> why it scores 0: the plan's refusals, and the copies the
    scorecard found by their reports."""
    out = {agent: dict(tracks) for agent, tracks in planned.items()}
    for track, agents in (card.copies if card else {}).items():
        for agent, why in agents.items():
            out.setdefault(agent, {})[track] = why
    return out
