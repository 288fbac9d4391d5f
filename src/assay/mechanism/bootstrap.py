"""How sure is a score: a bootstrap over a track's tasks (docs/agents.md, "How sure is a score").

A track score is computed from one draw of tasks; another draw of the same size
would score the agent differently. Resampling the drawn tasks with replacement
(the same resamples for every agent of the track, so agents are compared on the
same pseudo-draws) and rescoring each resample gives a percentile interval per
agent and says how often the top agents keep their order. Nothing here moves a
score or a weight: it is shown beside them.

Seeded from the round seed and the track, so a round's intervals are as
reproducible as its scores; rescoring is vectorised with numpy (a round of 256
agents x 4 tracks resamples each agent a thousand times).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from assay.mechanism.metrics import FLAGGING, MALICIOUS
from assay.mechanism.spec import MechanismSpec, Track

RESAMPLES = 1000
LEVEL = 0.95  # the intervals' confidence level
TOP = 3  # how many of the ranking's first agents must keep their order
DIGITS = 6  # interval ends are rounded: sums over resamples are floating point


class ScoredTask(Protocol):
    """One task's result as a track score reads it (a `TaskScore` or a scorecard row)."""

    @property
    def label(self) -> str: ...
    @property
    def verdict(self) -> str | None: ...
    @property
    def findings(self) -> float | None: ...
    @property
    def f2(self) -> float | None: ...


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True)
class Stability:
    """How often the ranking's first agents stay first, in the same order."""

    agents: tuple[str, ...]  # the ranking's first (up to) three agents, in order
    kept: float  # share of resamples where they are the top scorers in that order


def draws(seed: str, track: Track, tasks: int, resamples: int = RESAMPLES) -> NDArray[np.float64]:
    """How many times each task is drawn in each resample (rows), the same for every agent
    of the track."""
    digest = hashlib.sha256(f"{seed}/{track.value}/bootstrap".encode()).digest()
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "big")))
    return multiplicities(rng.integers(0, tasks, size=(resamples, tasks)), tasks)


def multiplicities(rows: NDArray[np.integer[Any]], tasks: int) -> NDArray[np.float64]:
    """Resamples given as task indices, as counts per task: a resample's sums become one
    matrix product, so a thousand resamples of an agent cost a millisecond."""
    resamples = rows.shape[0]
    flat = (rows + tasks * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=resamples * tasks).reshape(resamples, tasks)
    return counts.astype(np.float64)


def resampled_scores(
    track: Track, tasks: Sequence[ScoredTask], counts: NDArray[np.float64], spec: MechanismSpec
) -> NDArray[np.float64]:
    """The track score of each resample: `score_track`'s rule over the resampled tasks.

    Counts of tasks (true and false positives and negatives, tasks listing findings)
    are sums of whole numbers, exact in any order.
    """
    n = len(tasks)
    if track is Track.REPOSITORIES:
        f2 = np.array([t.f2 or 0.0 for t in tasks], dtype=np.float64)
        scores: NDArray[np.float64] = (counts @ f2) / n
        return scores
    malicious = np.array([t.label == MALICIOUS for t in tasks])
    flagged = np.array([t.verdict in FLAGGING for t in tasks])
    silent = np.array([t.verdict is None for t in tasks])
    correct = ~silent & (flagged == malicious)
    columns = np.stack(
        [
            malicious & correct,
            malicious & ~correct,
            ~malicious & correct,
            ~malicious & ~correct,
            np.array([t.findings is not None for t in tasks]),
        ],
        axis=1,
    ).astype(np.float64)
    # One product per column: OpenBLAS threads a matrix-matrix product, which on a busy
    # host costs ten times the five matrix-vector ones.
    tp, fn, tn, fp, counted = (counts @ column for column in columns.T)
    margins = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    with np.errstate(divide="ignore", invalid="ignore"):
        mcc = np.where(margins > 0, (tp * tn - fp * fn) / np.sqrt(margins), 0.0)
        values = np.array([t.findings or 0.0 for t in tasks], dtype=np.float64)
        findings = np.where(counted > 0, (counts @ values) / counted, 0.0)
    clamped = np.maximum(mcc, 0.0)
    w = spec.findings_weight
    weighted: NDArray[np.float64] = np.where(
        counted > 0, clamped * ((1.0 - w) + w * findings), clamped
    )
    return weighted


def interval(scores: NDArray[np.float64], level: float = LEVEL) -> Interval | None:
    """The percentile interval of the resampled scores (None without tasks to resample)."""
    if scores.size == 0:
        return None
    tail = (1.0 - level) / 2
    low, high = np.quantile(scores, [tail, 1.0 - tail])
    return Interval(round(float(low), DIGITS), round(float(high), DIGITS))


def stability(
    order: Sequence[str], scores: Mapping[str, NDArray[np.float64]], top_n: int = TOP
) -> Stability | None:
    """How often the first `top_n` agents of `order` (the ranking) are the resamples' top
    scorers in that order, each strictly above the next and the last above every agent
    after it: a tie does not separate two agents, so agents scoring alike never keep
    their order. With `top_n` 1, how often the first agent stays first. None with fewer
    than two agents."""
    if len(order) < 2:
        return None
    top = list(order[: max(1, top_n)])
    held = np.ones_like(scores[top[0]], dtype=bool)
    for ahead, behind in pairwise(top):
        held &= scores[ahead] > scores[behind]
    rest = [scores[a] for a in order[len(top) :]]
    if rest:
        held &= scores[top[-1]] > np.max(np.stack(rest), axis=0)
    return Stability(tuple(top), round(float(held.mean()), DIGITS))
