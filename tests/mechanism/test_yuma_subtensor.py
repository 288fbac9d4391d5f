"""`mechanism/yuma.py` against subtensor's own epoch test cases, ported as data.

Each case names the file and test in opentensor/subtensor it comes from; the inputs
and the expected outputs are that test's. The chain computes in I32F32 and stores
consensus and incentive as u16 proportions (`floor(x · 65535)`); this module computes in
floating point, so a figure agrees when it lands on the same u16 value within one step:
a tolerance of 1/65535 (the medians of the math test are exact decimals and compared at
1e-9).
"""

from __future__ import annotations

import math
import random

import pytest

from assay.mechanism.yuma import weighted_median_col, yuma

U16 = 65535


def as_u16(x: float) -> int:
    return math.floor(x * U16 + 1e-9)


def rows_of(flat: list[float], rows: int) -> dict[int, dict[int, float]]:
    """`vec_to_mat_fixed(flat, rows, false)` of subtensor's math tests, as sparse rows."""
    cols = len(flat) // rows
    return {
        r: {c: flat[r * cols + c] for c in range(cols) if flat[r * cols + c]} for r in range(rows)
    }


MEDIAN_WEIGHTS = [0.0, 0.1, 0.0, 0.0, 0.2, 0.4, 0.0, 0.3, 0.1, 0.0, 0.4, 0.5]
MEDIAN_WEIGHTS_2 = [0.0, 0.1, 0.0, 0.0, 0.2, 0.4, 0.0, 0.3, 0.1, 0.0, 0.0, 0.5]


# pallets/subtensor/src/tests/math.rs, test_math_weighted_median_col and
# test_math_weighted_median_col_sparse (the same cases, dense and sparse).
@pytest.mark.parametrize(
    ("stake", "flat", "kappa", "median"),
    [
        ([0.0, 0.75, 0.25, 0.0], MEDIAN_WEIGHTS, 0.24, [0.0, 0.3, 0.4]),
        ([0.0, 0.75, 0.25, 0.0], MEDIAN_WEIGHTS, 0.26, [0.0, 0.2, 0.4]),
        ([0.0, 0.75, 0.25, 0.0], MEDIAN_WEIGHTS, 0.76, [0.0, 0.2, 0.1]),
        ([0.0, 0.3, 0.2, 0.5], MEDIAN_WEIGHTS_2, 0.51, [0.0, 0.0, 0.4]),
        ([0.0, 0.0], [0.0, 0.0, 0.0, 0.0], 0.5, [0.0, 0.0]),
    ],
)
def test_math_weighted_median_col(
    stake: list[float], flat: list[float], kappa: float, median: list[float]
) -> None:
    rows = rows_of(flat, len(stake))
    found = weighted_median_col(dict(enumerate(stake)), rows, kappa)
    assert [found.get(c, 0.0) for c in range(len(median))] == pytest.approx(median, abs=1e-9)


def test_1_graph() -> None:
    """pallets/subtensor/src/tests/epoch.rs, test_1_graph: one neuron, stake 1e9, a lone
    self-weight: consensus 0, incentive 0."""
    result = yuma({0: 1e9}, {0: {0: float(U16)}})
    assert as_u16(result.consensus.get(0, 0.0)) == 0
    assert as_u16(result.incentive.get(0, 0.0)) == 0


def test_10_graph() -> None:
    """pallets/subtensor/src/tests/epoch.rs, test_10_graph: ten neurons, stake 1 each,
    each with a self-weight only: every consensus and incentive 0."""
    result = yuma(dict.fromkeys(range(10), 1.0), {i: {i: float(U16)} for i in range(10)})
    for uid in range(10):
        assert as_u16(result.consensus.get(uid, 0.0)) == 0
        assert as_u16(result.incentive.get(uid, 0.0)) == 0


def distribute_nodes(
    validators_n: int, network_n: int, interleave: int
) -> tuple[list[int], list[int]]:
    """`distribute_nodes` of the same file: blockwise, regular or random interleaving."""
    uids = list(range(network_n))
    if interleave == 0:
        return uids[:validators_n], uids[validators_n:]
    if interleave == 1:
        step = network_n // validators_n
        return [u for u in uids if u % step == 0], [u for u in uids if u % step]
    random.Random(interleave).shuffle(uids)
    return sorted(uids[:validators_n]), sorted(uids[validators_n:])


@pytest.mark.parametrize("server_self", [False, True])
@pytest.mark.parametrize("interleave", [0, 1, 2])
def test_512_graph(interleave: int, server_self: bool) -> None:
    """pallets/subtensor/src/tests/epoch.rs, test_512_graph: 512 UIDs, 64 validators with
    328_125_000_000_000 stake each and a permit weigh every server u16::MAX / 512; servers
    hold no stake (and, with `server_self`, set a self-weight). Validators: consensus 0,
    incentive 0. Servers: consensus 146 and incentive 146, floor(1 / 448 · 65535)."""
    validators, servers = distribute_nodes(64, 512, interleave)
    stake = dict.fromkeys(validators, 328_125_000_000_000.0)
    weights = {v: dict.fromkeys(servers, float(U16 // 512)) for v in validators}
    if server_self:
        weights |= {s: {s: float(U16)} for s in servers}
    result = yuma(stake, weights)
    for uid in validators:
        assert as_u16(result.consensus.get(uid, 0.0)) == 0
        assert as_u16(result.incentive.get(uid, 0.0)) == 0
    for uid in servers:
        assert abs(as_u16(result.consensus[uid]) - 146) <= 1
        assert abs(as_u16(result.incentive[uid]) - 146) <= 1


def test_can_set_self_weight_as_subnet_owner() -> None:
    """pallets/subtensor/src/tests/epoch.rs, test_can_set_self_weight_as_subnet_owner: the
    owner (UID 0, 5e12 stake, the only permit) weighs itself and UID 1 u16::MAX / 2 each;
    both earn incentive, and the same."""
    result = yuma({0: 5e12}, {0: {0: float(U16 // 2), 1: float(U16 // 2)}}, owner=0)
    assert result.incentive[0] > 0 and result.incentive[1] > 0
    assert as_u16(result.incentive[0]) == as_u16(result.incentive[1])
