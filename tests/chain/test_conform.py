"""Weights per hotkey to the UID vector: the SDK's clip and quantisation, and every drop named."""

from __future__ import annotations

import msgspec
import pytest

from assay.chain.conform import WeightLimitError, conform
from assay.records.chain import Dropped, Hyperparameters, MetagraphSnapshot, Neuron

HOTKEYS = [f"hk{uid}" for uid in range(5)]


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


def test_too_few_weights_for_the_subnet_are_refused() -> None:
    with pytest.raises(WeightLimitError, match="at least 3 weights"):
        conform({"hk0": 0.5, "hk1": 0.5}, subnet(min_allowed_weights=3))


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
