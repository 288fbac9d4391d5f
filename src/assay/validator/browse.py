"""What a viewer reads from a round store, beside the reports: the rounds with the
scores they wrote, one agent across rounds, and one task's reps as stored.

Every call opens the store read-only (see `Store`), so a store on a read-only
mount, or one a running round is writing, can be browsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.records.outcome import RunOutcome
from assay.records.round import merged_refusals
from assay.records.scorecard import AgentTrackScore, Scorecard
from assay.store.sqlite import RoundSummary, Store
from assay.validator.config import default_db


@dataclass(frozen=True)
class RoundTrend:
    """One round as the rounds list shows it: its summary and the scores it wrote."""

    summary: RoundSummary
    card: Scorecard | None  # None until the round completed
    # agent hash -> track -> why it scores 0 (refused at intake, or a copy by its reports)
    refused: dict[str, dict[str, str]]

    def ranked(self, track: str) -> dict[str, AgentTrackScore]:
        """The track's scores without the agents refused on it."""
        scores = self.card.scores.get(track, {}) if self.card else {}
        return {a: s for a, s in scores.items() if track not in self.refused.get(a, {})}


@dataclass(frozen=True)
class AgentRound:
    """One agent in one round."""

    round_id: str
    status: str
    name: str  # as pinned in that round
    scores: dict[str, AgentTrackScore]  # track -> its score, once the round completed
    refused: dict[str, str]  # track -> why it scores 0 there (not ranked on it)
    weight: float | None  # the weight written for it; None when none was written


def _reader(db: Path | None) -> Store:
    return Store(db or default_db(), read_only=True)


def round_trends(db: Path | None = None) -> list[RoundTrend]:
    """Every round, oldest first, with the scorecard it wrote (no rep is rescored)."""
    with _reader(db) as store:
        return [
            RoundTrend(s, card, merged_refusals(store.round(s.round_id).plan.refused, card))
            for s in store.summaries()
            for card in [store.scorecard(s.round_id)]
        ]


def agent_history(agent_hash: str, db: Path | None = None) -> list[AgentRound]:
    """Every round the agent was pinned in, oldest first."""
    with _reader(db) as store:
        statuses = {s.round_id: s for s in store.summaries()}
        out = []
        for round_id, name in store.agent_rounds(agent_hash):
            summary = statuses[round_id]
            card = store.scorecard(round_id)
            planned = store.round(round_id).plan.refused
            refused = merged_refusals(planned, card).get(agent_hash, {})
            scores = {
                track: per_agent[agent_hash]
                for track, per_agent in (card.scores.items() if card else ())
                if agent_hash in per_agent and track not in refused
            }
            weights = summary.weights
            out.append(
                AgentRound(
                    round_id=round_id,
                    status=summary.status,
                    name=name,
                    scores=scores,
                    refused=dict(refused),
                    weight=None if weights is None else weights.get(agent_hash, 0.0),
                )
            )
        return out


def task_reps(
    round_id: str, agent_hash: str, track: str, task_id: str, db: Path | None = None
) -> list[RunOutcome]:
    """One agent's stored reps of one task: its reports, failures and traces."""
    with _reader(db) as store:
        store.round(round_id)  # an unknown round is a StoreError, not an empty list
        return store.task_outcomes(round_id, agent_hash, track, task_id)


__all__ = ["AgentRound", "RoundTrend", "agent_history", "round_trends", "task_reps"]
