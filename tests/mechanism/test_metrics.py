from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import matthews_corrcoef

from assay.mechanism.metrics import Confusion, clamped_mcc, confusion, fbeta, mcc


def test_worked_example_from_the_design() -> None:
    assert round(mcc(tp=6, tn=20, fp=2, fn=2), 3) == 0.659


@pytest.mark.parametrize(
    "matrix", [(0, 0, 0, 0), (5, 0, 3, 0), (0, 7, 0, 2), (4, 0, 0, 0), (0, 3, 0, 0)]
)
def test_empty_margin_gives_zero(matrix: tuple[int, int, int, int]) -> None:
    assert mcc(*matrix) == 0.0


def test_perfectly_wrong_is_minus_one_and_clamps_to_zero() -> None:
    assert mcc(0, 0, 5, 5) == -1.0
    assert clamped_mcc(0, 0, 5, 5) == 0.0


@pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")
def test_mcc_agrees_with_scikit_learn_on_random_matrices() -> None:
    # The empty-margin shapes, then seeded random matrices: 100 in all cover the formula.
    matrices = [(5, 0, 3, 0), (0, 7, 0, 2), (4, 0, 0, 0), (0, 3, 0, 0), (0, 0, 5, 5)]
    rng = random.Random(1234)
    while len(matrices) < 100:
        tp, tn, fp, fn = (rng.randint(0, 40) for _ in range(4))
        if tp + tn + fp + fn:
            matrices.append((tp, tn, fp, fn))
    for tp, tn, fp, fn in matrices:
        truth = [1] * (tp + fn) + [0] * (tn + fp)
        predicted = [1] * tp + [0] * fn + [0] * tn + [1] * fp
        expected = matthews_corrcoef(truth, predicted)
        assert math.isclose(mcc(tp, tn, fp, fn), expected, abs_tol=1e-12)


def test_failed_tasks_count_as_wrong_verdicts() -> None:
    pairs = [("malicious", None), ("safe", None), ("malicious", "WARN"), ("safe", "ALLOW")]
    assert confusion(pairs) == Confusion(tp=1, tn=1, fp=1, fn=1)


@given(
    st.lists(st.sampled_from(["malicious", "safe"]), max_size=60),
    st.sampled_from(["ALLOW", "WARN", "BLOCK", None]),
)
def test_constant_predictors_score_zero(labels: list[str], verdict: str | None) -> None:
    m = confusion((label, verdict) for label in labels)
    assert clamped_mcc(m.tp, m.tn, m.fp, m.fn) == 0.0


@given(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50))
def test_clamped_mcc_is_within_bounds(tp: int, tn: int, fp: int, fn: int) -> None:
    assert 0.0 <= clamped_mcc(tp, tn, fp, fn) <= 1.0 + 1e-12


def test_fbeta() -> None:
    assert round(fbeta(0.6, 0.75), 3) == 0.714
    assert fbeta(0.0, 0.0) == 0.0
    assert fbeta(1.0, 1.0) == 1.0
    assert math.isclose(fbeta(0.5, 0.5, beta=1.0), 0.5)
