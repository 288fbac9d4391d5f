"""Yuma consensus: small matrices checked by hand, and the properties the algorithm promises."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.mechanism.yuma import History, disagreements, yuma

# Stake 5 : 3 : 2 -> 0.5, 0.3, 0.2 of the voting stake.
STAKE = {0: 5.0, 1: 3.0, 2: 2.0}
WEIGHTS = {
    0: {10: 0.6, 11: 0.4},
    1: {10: 0.2, 11: 0.8},
    2: {10: 0.5, 12: 0.5},
}


def test_a_three_validator_subnet_worked_by_hand() -> None:
    result = yuma(STAKE, WEIGHTS)
    # Miner 10: 0.6 from half the stake (validator 0) -> 0.6. Miner 11: 0.8 has 0.3 of
    # the stake behind it, 0.4 or more has 0.8 -> 0.4. Miner 12: only 0.2 of the stake
    # gives it anything -> 0.
    assert result.consensus == pytest.approx({10: 0.6, 11: 0.4, 12: 0.0})
    assert result.clipped[1] == pytest.approx({10: 0.2, 11: 0.4})
    assert result.vtrust == pytest.approx({0: 1.0, 1: 0.6, 2: 0.5})
    # R_10 = .5·.6 + .3·.2 + .2·.5 = .46; R_11 = .5·.4 + .3·.4 = .32; I = R / ΣR.
    assert result.incentive == pytest.approx({10: 0.46 / 0.78, 11: 0.32 / 0.78, 12: 0.0})
    # The chain reports neither trust nor a rank apart from the incentive any more.
    assert not hasattr(result, "trust") and not hasattr(result, "ranks")


def test_kappa_is_the_subnets() -> None:
    # Miner 12 has 0.2 of the stake behind 0.5: a Kappa of 0.2 makes that its consensus.
    assert yuma(STAKE, WEIGHTS, kappa=0.2).consensus[12] == pytest.approx(0.5)
    # The default is the chain's, 32767/65535, a hair under half: half the stake is enough.
    even = yuma({0: 1.0, 1: 1.0}, {0: {5: 1.0}, 1: {6: 1.0}})
    assert even.consensus == pytest.approx({5: 1.0, 6: 1.0})


def test_the_owners_self_weight_is_kept_and_earns_incentive() -> None:
    weights = {0: {0: 1.0, 10: 1.0}, 1: {0: 1.0, 10: 1.0}}
    kept = yuma({0: 1.0, 1: 1.0}, weights, owner=0)
    assert kept.weights[0] == pytest.approx({0: 0.5, 10: 0.5})
    assert kept.incentive == pytest.approx({0: 0.5, 10: 0.5})
    masked = yuma({0: 1.0, 1: 1.0}, weights)
    assert masked.weights[0] == {10: 1.0} and masked.incentive[0] < 0.5


def test_weights_set_before_a_miner_registered_are_masked() -> None:
    history = History(last_update={0: 100, 1: 300}, registered_at={10: 200, 11: 50})
    result = yuma({0: 1.0, 1: 1.0}, {0: {10: 1.0, 11: 1.0}, 1: {10: 1.0, 11: 1.0}}, history=history)
    # Validator 0 last set weights at block 100, before UID 10's owner registered at 200.
    assert result.weights[0] == {11: 1.0}
    assert result.weights[1] == pytest.approx({10: 0.5, 11: 0.5})


def test_where_a_validator_disagrees_most_comes_first() -> None:
    result = yuma(STAKE, WEIGHTS)
    found = [(d.miner, round(d.difference, 9)) for d in disagreements(result, 2)]
    assert found == [(12, 0.5), (11, -0.4), (10, -0.1)]
    assert [d.miner for d in disagreements(result, 2, top=1)] == [12]
    assert disagreements(result, 0) == []


def test_self_weight_is_masked_and_a_row_without_stake_is_judged_but_does_not_vote() -> None:
    weights = {**WEIGHTS, 0: {0: 5.0, 10: 0.6, 11: 0.4}, 99: {10: 1.0}}
    result = yuma(STAKE, weights)
    assert result.weights[0] == pytest.approx({10: 0.6, 11: 0.4})
    assert result.consensus == pytest.approx(yuma(STAKE, WEIGHTS).consensus)
    assert result.vtrust[99] == pytest.approx(0.6)
    assert 99 not in result.stake


def test_no_voter_and_no_weight_give_empty_results() -> None:
    result = yuma({}, {1: {2: 1.0}})
    assert result.incentive == {} and result.consensus == {}
    assert result.vtrust == {1: 0.0}


stakes = st.dictionaries(st.integers(0, 5), st.floats(0.01, 1e6), min_size=1, max_size=6)
rows = st.dictionaries(st.integers(6, 14), st.floats(0.0, 1.0), min_size=1, max_size=9)


@given(stakes, st.data())
def test_the_bounds_hold_on_any_matrix(stake: dict[int, float], data: st.DataObject) -> None:
    weights = {v: data.draw(rows) for v in stake}
    result = yuma(stake, weights)
    assert all(-1e-9 <= t <= 1 + 1e-9 for t in result.vtrust.values())
    assert not result.incentive or math.isclose(math.fsum(result.incentive.values()), 1.0)
    for v, row in result.clipped.items():
        for m, w in row.items():
            assert w <= result.weights[v][m] + 1e-12
    for m, c in result.consensus.items():
        assert c <= max(row.get(m, 0.0) for row in result.weights.values()) + 1e-12


@given(stakes, st.data())
def test_a_validator_with_most_of_the_stake_and_its_copier_keep_all_their_weight(
    stake: dict[int, float], data: st.DataObject
) -> None:
    weights = {v: data.draw(rows) for v in stake}
    whale = max(stake)
    stake = {**stake, whale: math.fsum(stake.values()) * 2}
    weights[99] = dict(weights[whale])  # a copier without stake
    result = yuma(stake, weights)
    if result.weights[whale]:
        assert result.vtrust[whale] == pytest.approx(1.0)
        assert result.vtrust[99] == pytest.approx(1.0)


@given(stakes, rows)
def test_when_every_validator_agrees_the_consensus_is_their_row(
    stake: dict[int, float], row: dict[int, float]
) -> None:
    result = yuma(stake, {v: row for v in stake})
    shared = result.weights[min(stake)]
    assert result.consensus == pytest.approx(shared)
    assert result.incentive == pytest.approx(shared)
    if shared:
        assert all(t == pytest.approx(1.0) for t in result.vtrust.values())


@given(stakes, st.data())
def test_a_validator_that_copies_the_consensus_keeps_all_its_weight(
    stake: dict[int, float], data: st.DataObject
) -> None:
    """Its row is the consensus normalised; where the consensus sums to 1 or more (no
    part of the copy exceeds it) nothing is clipped."""
    weights = {v: data.draw(rows) for v in stake}
    consensus = yuma(stake, weights).consensus
    weights[99] = dict(consensus)
    result = yuma(stake, weights)
    if math.fsum(consensus.values()) >= 1.0:
        assert result.vtrust[99] == pytest.approx(1.0)
