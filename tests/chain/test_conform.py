"""Weights per hotkey to the UID vector: the SDK's clip and quantisation, and every drop named."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.chain.admission import max_upscaled, refusals, within_max_weight
from assay.chain.conform import WeightLimitError, conform
from assay.records.chain import Dropped, Hyperparameters, MetagraphSnapshot, Neuron

HOTKEYS = [f"hk{uid}" for uid in range(5)]


def wide(size: int, **limits: int) -> MetagraphSnapshot:
    """`size` UIDs; UID 0 is a validator."""
    neurons = tuple(
        Neuron(uid=uid, hotkey=f"hk{uid}", stake=1.0, validator_permit=uid == 0)
        for uid in range(size)
    )
    return MetagraphSnapshot(
        netuid=1, block=10, neurons=neurons, hyperparameters=Hyperparameters(**limits)
    )


def subnet(**limits: int) -> MetagraphSnapshot:
    neurons = tuple(Neuron(uid=uid, hotkey=hk, stake=1.0) for uid, hk in enumerate(HOTKEYS))
    return MetagraphSnapshot(
        netuid=1, block=10, neurons=neurons, hyperparameters=Hyperparameters(**limits)
    )


def test_registered_hotkeys_get_their_uids_max_upscaled_to_u16() -> None:
    vector = conform({"hk3": 0.5, "hk1": 0.25, "hk4": 0.25}, subnet())
    assert vector.uids == (1, 3, 4)
    # The largest weight is 65535; the others keep their ratio to it, rounded.
    assert vector.weights == (32768, 65535, 32768)
    assert vector.dropped == ()


def test_unregistered_and_deregistered_hotkeys_are_dropped_with_their_reason() -> None:
    vector = conform(
        {"hk1": 0.5, "gone": 0.3, "never": 0.2},
        subnet(),
        agents={"gone": ["a" * 64]},
        previously={"gone": 7},
    )
    assert vector.uids == (1,)
    assert vector.dropped == (
        Dropped(hotkey="gone", agents=("a" * 64,), weight=0.3, reason="deregistered"),
        Dropped(hotkey="never", agents=(), weight=0.2, reason="unregistered"),
    )


def test_a_weight_below_one_u16_step_of_the_largest_is_dropped_as_below_quantum() -> None:
    vector = conform({"hk0": 1.0, "hk2": 1e-6}, subnet())
    assert vector.uids == (0,)
    assert [(d.hotkey, d.reason) for d in vector.dropped] == [("hk2", "below quantum")]


def test_the_max_weight_limit_clips_the_largest_share() -> None:
    # A limit of half: 0.9 / 0.05 / 0.05 cannot stand; the top share is cut to the limit.
    vector = conform({"hk0": 0.9, "hk1": 0.05, "hk2": 0.05}, subnet(max_weight_limit=32767))
    total = sum(vector.weights)
    assert max(vector.weights) / total <= 32767 / 65535 + 1e-4
    assert vector.weights[1] == vector.weights[2]


def test_too_few_paid_uids_are_made_up_to_the_subnets_minimum() -> None:
    # min(subnet_n, min_allowed_weights) = 3: a third UID gets one u16 step, no more.
    vector = conform({"hk0": 0.5, "hk1": 0.5}, subnet(min_allowed_weights=3))
    assert vector.uids == (0, 1, 2) and vector.weights == (65535, 65535, 1)
    assert any("at least 3 UIDs" in note for note in vector.notes)
    # A minimum above the subnet's size asks for every UID, not more than there are.
    everyone = conform({"hk0": 1.0}, subnet(min_allowed_weights=64))
    assert everyone.uids == (0, 1, 2, 3, 4)
    assert refusals(everyone.uids, everyone.weights, subnet(min_allowed_weights=64)) == []


def test_the_top_three_split_under_a_limit_of_0_3_spreads_the_excess() -> None:
    big = wide(32, max_weight_limit=19660)  # 0.3 of 65535
    vector = conform({"hk3": 0.5, "hk4": 0.3, "hk5": 0.2}, big, validator=0)
    shares = {u: w / sum(vector.weights) for u, w in zip(vector.uids, vector.weights, strict=True)}
    assert max(shares.values()) <= 19660 / 65535
    # The first two are held at the limit, the third keeps its 0.2, the other 0.2 goes to
    # the validator's own UID, whose self-weight the epoch masks: burned, not paid.
    assert shares[3] == pytest.approx(0.3, abs=1e-4) and shares[4] == pytest.approx(0.3, abs=1e-4)
    assert shares[5] == pytest.approx(0.2, abs=1e-4) and shares[0] == pytest.approx(0.2, abs=1e-4)
    assert set(vector.uids) == {0, 3, 4, 5}
    assert any("own UID 0" in note for note in vector.notes)
    assert refusals(vector.uids, vector.weights, big, validator=0) == []
    # A limit of 0.15: the own UID holds 0.15 of the excess, the rest goes to other UIDs.
    tight = wide(32, max_weight_limit=9830)
    spread = conform({"hk3": 0.5, "hk4": 0.3, "hk5": 0.2}, tight, validator=0)
    assert len(spread.uids) == 7 and refusals(spread.uids, spread.weights, tight) == []
    # Not knowing its own UID (a dry run without --hotkey), the excess goes to other UIDs.
    unknown = conform({"hk3": 0.5, "hk4": 0.3, "hk5": 0.2}, big)
    assert set(unknown.uids) == {0, 3, 4, 5} and refusals(unknown.uids, unknown.weights, big) == []


def test_a_limit_no_subnet_of_this_size_can_hold_is_refused() -> None:
    with pytest.raises(WeightLimitError, match="cannot hold a max-weight limit"):
        conform({"hk0": 1.0}, subnet(max_weight_limit=6553))  # 0.1 on 5 UIDs


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.floats(1e-4, 1.0), min_size=1, max_size=12),
    st.integers(2000, 65535),
    st.integers(0, 40),
    st.integers(2, 64),
)
def test_every_vector_returned_is_one_the_chain_takes(
    paid: list[float], limit: int, minimum: int, size: int
) -> None:
    """The port of the chain's checks, and independently the limit in plain arithmetic."""
    snapshot = wide(size, max_weight_limit=limit, min_allowed_weights=minimum)
    weights = {f"hk{uid}": w for uid, w in enumerate(paid[:size])}
    try:
        vector = conform(weights, snapshot, validator=0)
    except WeightLimitError:
        assert size * limit / 65535 <= 1.0 + 1e-3
        return
    assert refusals(vector.uids, vector.weights, snapshot, validator=0) == []
    assert len(vector.uids) >= min(size, minimum)
    if limit < 65535 and len(vector.uids) > 1:
        assert max(vector.weights) / sum(vector.weights) <= limit / 65535


def test_the_chains_checks_name_what_it_would_refuse() -> None:
    net = wide(4, max_weight_limit=32768, min_allowed_weights=2, version_key=5)
    assert refusals([1, 2], [65535, 65535], net, validator=0, version_key=5) == []
    # A lone self-weight is exempt from the minimum and the limit.
    assert refusals([0], [65535], net, validator=0, version_key=5) == []
    found = refusals([1, 1, 9], [65535, 1, 1], net, validator=3, version_key=4)
    assert [p.rsplit("(", 1)[1] for p in found] == [
        "IncorrectWeightVersionKey)",
        "NeuronNoValidatorPermit)",
        "DuplicateUids)",
        "UidVecContainInvalidOne)",
        "MaxWeightExceeded)",
    ]
    assert "WeightVecLengthIsLow" in refusals([1], [65535], net, validator=0, version_key=5)[0]


def test_the_fixed_point_limit_is_the_chains() -> None:
    # Three equal shares are 1/3 each; 21845/65535 is 1/3 exactly, 21844/65535 just below,
    # so they are taken at 21845 and refused at 21844, as I32F32 truncation has it.
    assert not within_max_weight([65535, 65535, 65535], 21844)
    assert within_max_weight([65535, 65535, 65535], 21845)
    assert max_upscaled([10, 20, 40]) == [16384, 32768, 65535]


def test_drops_from_before_are_carried_and_nothing_registered_gives_an_empty_vector() -> None:
    earlier = Dropped(hotkey=None, agents=("b" * 64,), weight=0.4, reason="unsigned")
    vector = conform({"never": 0.6}, subnet(), dropped=[earlier])
    assert (vector.uids, vector.weights) == ((), ())
    assert [d.reason for d in vector.dropped] == ["unsigned", "unregistered"]


def test_the_vector_is_the_same_for_the_same_input() -> None:
    weights = {hk: 1.0 / (i + 1) for i, hk in enumerate(HOTKEYS)}
    one = msgspec.json.encode(conform(weights, subnet(max_weight_limit=20000)))
    assert one == msgspec.json.encode(
        conform(dict(reversed(weights.items())), subnet(max_weight_limit=20000))
    )
