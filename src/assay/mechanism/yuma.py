"""Yuma consensus on one weight matrix: what a subnet's epoch would make of the weights.

This is the consensus step of Yuma as the Bittensor whitepaper and subtensor's epoch
publish it, in floating point (the chain computes in I32F32 fixed point, so its
figures can differ in the last digits):

1. Stake `S`: the validators holding a permit, normalised to sum 1. Rows of other
   UIDs do not vote.
2. Weights `W`: each voting row without its self-weight (the chain masks the
   diagonal), normalised to sum 1.
3. Consensus per miner: `C_j = max{c : Σ_{i: W_ij ≥ c} S_i ≥ κ}` with κ = 0.5, the
   largest weight that at least κ of the stake gives the miner (the stake-weighted
   median).
4. Clipped weights `W̄_ij = min(W_ij, C_j)`; a validator's vtrust is `Σ_j W̄_ij`, the
   share of its weight that survives clipping.
5. Rank `R_j = Σ_i S_i W̄_ij`; incentive `I_j = R_j / Σ R`; trust `T_j = R_j / P_j`
   where `P_j = Σ_i S_i W_ij` is the pre-clip rank.

It covers one epoch's consensus, clipping, ranks, incentive, trust and vtrust. It
leaves out what depends on the chain's history or its emission: bonds and their EMA
(plain or with liquid alpha), hence dividends and the validators' emission; the
activity cutoff, weights older than a UID's registration, the commit-reveal delay; the
split of emission between miners and validators.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

KAPPA = 0.5

Matrix = Mapping[int, Mapping[int, float]]


@dataclass(frozen=True)
class Yuma:
    consensus: dict[int, float]  # miner -> C_j
    clipped: dict[int, dict[int, float]]  # row -> miner -> W̄_ij (every row given)
    ranks: dict[int, float]  # miner -> R_j
    incentive: dict[int, float]  # miner -> I_j (sums to 1, or empty)
    trust: dict[int, float]  # miner -> R_j / P_j
    vtrust: dict[int, float]  # row -> Σ_j W̄_ij (every row given)
    stake: dict[int, float]  # validator -> its normalised stake (the voting ones)
    weights: dict[int, dict[int, float]]  # row -> normalised, without its self-weight


def yuma(stake: Mapping[int, float], weights: Matrix, *, kappa: float = KAPPA) -> Yuma:
    """Consensus from `stake` (voting validator -> stake; zero-stake ones do not vote)
    and `weights` (validator -> miner -> weight, any scale per row). Rows of UIDs that
    do not vote are clipped against the voters' consensus too, so their vtrust says what
    they would keep if they voted with a negligible stake; UIDs that neither vote nor
    weigh anything (the miners) have no row.

    >>> result = yuma({0: 3.0, 1: 1.0}, {0: {2: 1.0, 3: 1.0}, 1: {2: 1.0}})
    >>> result.consensus, result.vtrust
    ({2: 0.5, 3: 0.5}, {0: 1.0, 1: 0.5})
    """
    voters = _normalise({v: s for v, s in stake.items() if s > 0})
    judged = sorted(v for v in set(weights) | set(voters) if weights.get(v) or v in voters)
    rows = {v: _normalise(_without_self(v, weights.get(v, {}))) for v in judged}
    votes = {v: rows.get(v, {}) for v in voters}
    miners = sorted({m for row in votes.values() for m in row})
    consensus = {m: _stake_median(voters, votes, m, kappa) for m in miners}
    clipped = {
        v: {m: min(w, consensus.get(m, 0.0)) for m, w in row.items()} for v, row in rows.items()
    }
    prerank = {m: math.fsum(voters[v] * votes[v].get(m, 0.0) for v in voters) for m in miners}
    ranks = {
        m: math.fsum(voters[v] * clipped.get(v, {}).get(m, 0.0) for v in voters) for m in miners
    }
    return Yuma(
        consensus=consensus,
        clipped=clipped,
        ranks=ranks,
        incentive=_normalise(ranks),
        trust={m: ranks[m] / prerank[m] if prerank[m] > 0 else 0.0 for m in miners},
        vtrust={v: math.fsum(row.values()) for v, row in clipped.items()},
        stake=voters,
        weights=rows,
    )


@dataclass(frozen=True)
class Disagreement:
    miner: int
    weight: float  # the validator's normalised weight on the miner
    consensus: float
    # weight - consensus: above 0 is clipped away (costs vtrust), below 0 is weight the
    # validator gives less than the consensus does.
    difference: float


def disagreements(result: Yuma, validator: int, *, top: int = 5) -> list[Disagreement]:
    """The miners where `validator`'s row is farthest from the consensus, farthest first
    (ties by UID)."""
    row = result.weights.get(validator, {})
    rows = [
        Disagreement(m, row.get(m, 0.0), c, row.get(m, 0.0) - c)
        for m, c in result.consensus.items()
    ]
    rows = [d for d in rows if d.difference != 0.0]
    return sorted(rows, key=lambda d: (-abs(d.difference), d.miner))[:top]


def _stake_median(stake: Mapping[int, float], rows: Matrix, miner: int, kappa: float) -> float:
    """The largest weight on `miner` that validators holding at least `kappa` of the
    stake give it or more."""
    support = 0.0
    for weight, voter in sorted(((rows[v].get(miner, 0.0), v) for v in rows), reverse=True):
        support += stake[voter]
        if support >= kappa - 1e-12:
            return weight
    return 0.0


def _without_self(validator: int, row: Mapping[int, float]) -> dict[int, float]:
    return {m: w for m, w in row.items() if m != validator and w > 0}


def _normalise(values: Mapping[int, float]) -> dict[int, float]:
    total = math.fsum(values.values())
    if total <= 0:
        return {}
    return {k: values[k] / total for k in sorted(values)}
