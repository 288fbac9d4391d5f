from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.mechanism.weights import ema, emission_weights, tie_break_key
from assay.schema.mechanism_file import pinned

SPEC = pinned()


def test_top_three_split_of_one_track_with_idle_shares_redistributed() -> None:
    weights = emission_weights(
        {"skills": {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.3}}, salt="s", spec=SPEC
    )
    assert weights == pytest.approx({"a": 0.5, "b": 0.3, "c": 0.2})


def test_below_threshold_and_zero_are_not_paid() -> None:
    weights = emission_weights(
        {"skills": {"a": 0.19, "b": 0.0}, "repositories": {"c": 0.49, "d": 0.5}},
        salt="s",
        spec=SPEC,
    )
    assert weights == {"d": 1.0}


def test_fewer_than_three_eligible_are_renormalised() -> None:
    weights = emission_weights({"packages": {"a": 0.9, "b": 0.8}}, salt="s", spec=SPEC)
    assert weights == pytest.approx({"a": 0.5 / 0.8, "b": 0.3 / 0.8})


def test_track_shares_and_idle_share_split_equally() -> None:
    scores = {"skills": {"a": 0.9}, "repositories": {"b": 0.9}, "packages": {"c": 0.1}}
    weights = emission_weights(scores, salt="s", spec=SPEC)
    idle = 0.225 + 0.25
    assert weights["a"] == pytest.approx(0.225 + idle / 2)
    assert weights["b"] == pytest.approx(0.30 + idle / 2)


def test_ties_are_broken_by_the_salted_hash() -> None:
    scores = {"skills": {"x": 0.7, "y": 0.7, "z": 0.7, "w": 0.7}}
    weights = emission_weights(scores, salt="seed-1", spec=SPEC)
    order = sorted("xyzw", key=lambda a: tie_break_key("seed-1", "skills", a))
    assert [a for a in order if a in weights] == order[:3]
    assert weights[order[0]] == pytest.approx(0.5)
    assert emission_weights(scores, salt="seed-1", spec=SPEC) == weights


def test_nobody_eligible_gives_an_empty_vector() -> None:
    assert emission_weights({"skills": {"a": 0.1}}, salt="s", spec=SPEC) == {}
    assert emission_weights({}, salt="s", spec=SPEC) == {}


score_maps = st.dictionaries(
    st.sampled_from(["skills", "mcp_servers", "packages", "repositories"]),
    st.dictionaries(st.text("abcdef", min_size=1, max_size=4), st.floats(0, 1), max_size=8),
)


@given(score_maps)
def test_weights_sum_to_one_and_pay_at_most_three_per_track(
    scores: dict[str, dict[str, float]],
) -> None:
    weights = emission_weights(scores, salt="s", spec=SPEC)
    assert not weights or math.isclose(sum(weights.values()), 1.0)
    assert all(w > 0 for w in weights.values())
    assert len(weights) <= 3 * len(scores)


def test_ema_blends_with_the_previous_vector() -> None:
    blended = ema({"a": 1.0}, {"b": 1.0}, spec=SPEC)
    assert blended == pytest.approx({"a": 0.3, "b": 0.7})
    assert ema({"a": 0.5, "b": 0.5}, {}, spec=SPEC) == pytest.approx({"a": 0.5, "b": 0.5})
