from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.mechanism.consensus import reduce_scores, reduce_verdicts


@pytest.mark.parametrize(
    ("reps", "expected"),
    [
        (["BLOCK", "BLOCK", "ALLOW"], "BLOCK"),
        (["ALLOW", "WARN", "BLOCK"], "WARN"),
        (["ALLOW", "BLOCK"], "ALLOW"),
        (["WARN", None, "BLOCK"], "WARN"),
        ([None, None, None], None),
        ([], None),
        (["ALLOW", None, None], "ALLOW"),
        (["BLOCK", "WARN", "WARN", "BLOCK"], "WARN"),
        (["ALLOW", "ALLOW", "BLOCK", "BLOCK", "BLOCK"], "BLOCK"),
    ],
)
def test_examples(reps: list[str | None], expected: str | None) -> None:
    assert reduce_verdicts(reps) == expected


def test_unknown_verdict_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown verdict"):
        reduce_verdicts(["ALLOW", "MAYBE"])


verdicts = st.lists(st.sampled_from(["ALLOW", "WARN", "BLOCK", None]), max_size=9)


@given(verdicts, st.randoms())
def test_rep_order_does_not_matter(reps: list[str | None], rnd: object) -> None:
    shuffled = list(reps)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert reduce_verdicts(shuffled) == reduce_verdicts(reps)


def test_scores_mean_over_completed_reps() -> None:
    assert reduce_scores([0.5, None, 1.0]) == 0.75
    assert reduce_scores([None, None]) == 0.0
    assert reduce_scores([]) == 0.0


@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), max_size=8), st.randoms())
def test_score_mean_is_order_invariant(scores: list[float | None], rnd: object) -> None:
    shuffled = list(scores)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert reduce_scores(shuffled) == reduce_scores(scores)
