"""Reducing a task's repetitions to one result (DESIGN §6)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

DECISIONS: tuple[str, ...] = ("ALLOW", "WARN", "BLOCK")
_ORDINAL = {d: i for i, d in enumerate(DECISIONS)}


def reduce_verdicts(verdicts: Sequence[str | None]) -> str | None:
    """The task verdict from its reps' verdicts; None marks a failed rep.

    The strict majority of completed reps wins; without one, the median under
    ALLOW < WARN < BLOCK, taking the lower ordinal on an even split. No
    completed rep gives None (the task is then incorrect).
    """
    completed = [v for v in verdicts if v is not None]
    if not completed:
        return None
    counts = Counter(completed)
    if not counts.keys() <= _ORDINAL.keys():
        raise ValueError(f"unknown verdict among {sorted(counts)!r}")
    for verdict, count in counts.items():
        if 2 * count > len(completed):
            return verdict
    ordered = sorted(completed, key=_ORDINAL.__getitem__)
    return ordered[(len(ordered) - 1) // 2]


def reduce_scores(scores: Sequence[float | None]) -> float:
    """A repository task's score: the mean over completed reps, 0.0 when none."""
    completed = [s for s in scores if s is not None]
    if not completed:
        return 0.0
    # fsum is exact, so the mean does not depend on the order of the reps.
    return math.fsum(completed) / len(completed)


def representative(reps: Sequence[tuple[int, str | None]]) -> int | None:
    """The rep that speaks for a task: the lowest-numbered one agreeing with the consensus.

    `reps` are (rep number, verdict or None for a failed rep). Its report is the one
    signed into an attestation and shown as the agent's findings for the task.
    """
    consensus = reduce_verdicts([verdict for _, verdict in reps])
    if consensus is None:
        return None
    return min(rep for rep, verdict in reps if verdict == consensus)
