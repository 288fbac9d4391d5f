"""Confusion matrices, Matthews correlation and F-beta (DESIGN §6)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

MALICIOUS = "malicious"
SAFE = "safe"
FLAGGING = frozenset({"BLOCK", "WARN"})


@dataclass(frozen=True)
class Confusion:
    tp: int = 0
    tn: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def total(self) -> int:
        return self.tp + self.tn + self.fp + self.fn


def is_correct(label: str, verdict: str | None) -> bool:
    """A task verdict is correct when it flags a malicious artifact or allows a safe one.

    A missing verdict (every rep failed) is never correct.
    """
    if verdict is None:
        return False
    return (verdict in FLAGGING) == (label == MALICIOUS)


def confusion(pairs: Iterable[tuple[str, str | None]]) -> Confusion:
    """Confusion matrix over (label, task verdict) pairs.

    A failed task (verdict None) counts as the wrong verdict: FN on a malicious
    artifact, FP on a safe one.
    """
    tp = tn = fp = fn = 0
    for label, verdict in pairs:
        malicious = label == MALICIOUS
        correct = is_correct(label, verdict)
        if malicious:
            tp, fn = (tp + 1, fn) if correct else (tp, fn + 1)
        else:
            tn, fp = (tn + 1, fp) if correct else (tn, fp + 1)
    return Confusion(tp=tp, tn=tn, fp=fp, fn=fn)


def mcc(tp: int, tn: int, fp: int, fn: int) -> float:
    """Matthews correlation; 0.0 when any margin of the matrix is empty.

    DESIGN §6's worked example, and a constant predictor:

    >>> round(mcc(tp=6, tn=20, fp=2, fn=2), 3)
    0.659
    >>> mcc(tp=8, tn=0, fp=22, fn=0)
    0.0
    """
    margins = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    if margins == 0:
        return 0.0
    # The products are exact integers; one square root keeps rounding to a minimum.
    return (tp * tn - fp * fn) / math.sqrt(margins)


def clamped_mcc(tp: int, tn: int, fp: int, fn: int) -> float:
    return max(0.0, mcc(tp, tn, fp, fn))


def fbeta(precision: float, recall: float, beta: float = 2.0) -> float:
    """F-beta of a precision and recall; 0.0 when both are 0.

    DESIGN §6's worked example: 4 planted, 5 reported, 3 matched.

    >>> round(fbeta(precision=3 / 5, recall=3 / 4), 3)
    0.714
    """
    b2 = beta * beta
    denominator = b2 * precision + recall
    if denominator == 0:
        return 0.0
    return (1 + b2) * precision * recall / denominator
