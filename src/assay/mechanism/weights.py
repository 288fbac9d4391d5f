"""From track scores to one emission weight vector (DESIGN §6)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

from assay.mechanism.spec import MechanismSpec, Track


def eligible(score: float, threshold: float, floor: float = 0.0) -> bool:
    """Paid on a track only at or above the threshold and strictly above the floor.

    The floor is what reporting nothing scores on the same draw: 0 on the
    behavioural tracks, the share of clean repositories on repositories.
    """
    return score > floor and score >= threshold


def tie_break_key(salt: str, track: str, agent_id: str) -> str:
    return hashlib.sha256(f"{salt}:{track}:{agent_id}".encode()).hexdigest()


def rank(
    scores: Mapping[str, float], *, salt: str, track: str, threshold: float, floor: float = 0.0
) -> list[str]:
    """Eligible agents, best first; equal scores ordered by the salted hash."""
    paid = [a for a, s in scores.items() if eligible(s, threshold, floor)]
    return sorted(paid, key=lambda a: (-scores[a], tie_break_key(salt, track, a)))


def track_split(ranking: list[str], split: tuple[float, ...]) -> dict[str, float]:
    """The top places' shares, renormalised when fewer agents are eligible than places."""
    paid = ranking[: len(split)]
    total = math.fsum(split[: len(paid)])
    return {agent: split[i] / total for i, agent in enumerate(paid)}


def emission_weights(
    scores: Mapping[str, Mapping[str, float]],
    *,
    salt: str,
    spec: MechanismSpec,
    floors: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """One weight vector from scores[track][agent].

    Per track: threshold and floor (`floors[track]`, 0 when absent), rank,
    top-3 split of the track's share. Shares of tracks with no eligible agent
    are split equally among the others. The result sums to 1, or is empty when
    no agent is eligible anywhere.

    One active track takes every share: its top three are paid 0.50 / 0.30 / 0.20,
    and an agent below the threshold (0.20 on skills) nothing.

    >>> from assay.schema.mechanism_file import pinned
    >>> scores = {"skills": {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.3, "e": 0.1}}
    >>> weights = emission_weights(scores, salt="seed", spec=pinned())
    >>> {agent: round(w, 3) for agent, w in weights.items()}
    {'a': 0.5, 'b': 0.3, 'c': 0.2}
    """
    floors = floors or {}
    splits: dict[Track, dict[str, float]] = {}
    for name in sorted(scores):
        track = Track(name)
        ranking = rank(
            scores[name],
            salt=salt,
            track=track.value,
            threshold=spec.track(track).threshold,
            floor=floors.get(name, 0.0),
        )
        if ranking:
            splits[track] = track_split(ranking, spec.top_split)
    if not splits:
        return {}
    idle = math.fsum(spec.track(t).emission_share for t in Track if t not in splits)
    bonus = idle / len(splits)
    weights: dict[str, float] = {}
    for track in sorted(splits):
        share = spec.track(track).emission_share + bonus
        for agent, part in splits[track].items():
            weights[agent] = weights.get(agent, 0.0) + share * part
    return normalise(weights)


def normalise(weights: Mapping[str, float]) -> dict[str, float]:
    total = math.fsum(weights.values())
    if total <= 0:
        return {}
    return {agent: weights[agent] / total for agent in sorted(weights)}


def ema(
    new: Mapping[str, float], previous: Mapping[str, float], *, spec: MechanismSpec
) -> dict[str, float]:
    """`w = α·new + (1 − α)·prev` over the union of agents (α pinned at 0.3), normalised."""
    alpha = spec.ema_new
    agents = sorted(set(new) | set(previous))
    blended = {a: alpha * new.get(a, 0.0) + (1.0 - alpha) * previous.get(a, 0.0) for a in agents}
    return normalise({a: w for a, w in blended.items() if w > 0.0})
