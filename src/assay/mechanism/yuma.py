"""Yuma consensus on one weight matrix: what a subnet's epoch makes of the weights.

The consensus step of Yuma as subtensor's epoch computes it today
(`pallets/subtensor/src/epoch/run_epoch.rs`, `epoch_mechanism`), in floating point; the
chain computes in I32F32 fixed point, so its figures differ in the last digits
(`tests/mechanism/test_yuma_subtensor.py` states the tolerance):

1. Stake `S`: the validators holding a permit, normalised to sum 1; the subnet owner
   always holds one. Rows of other UIDs do not vote.
2. Weights `W`: each voting row without its self-weight (the chain masks the diagonal,
   except the subnet owner's own entry, which it keeps), without weights on UIDs
   registered at or after the row's last update (when the registration blocks are
   known), normalised to sum 1.
3. Consensus per miner: `C_j = max{c : Σ_{i: W_ij ≥ c} S_i ≥ κ}`, the largest weight
   that at least κ of the stake gives the miner (the stake-weighted median), with κ
   the subnet's Kappa over 65535 (32767/65535 by default).
4. Clipped weights `W̄_ij = min(W_ij, C_j)`; a validator's vtrust is `Σ_j W̄_ij`, the
   share of its weight that survives clipping.
5. Incentive `I_j = R_j / Σ R` with `R_j = Σ_i S_i W̄_ij`.

The chain no longer computes trust or a separate rank (subtensor removed them in late
2025; the normalised rank is the incentive), so neither is reported. What is left out:
the activity cutoff (stake of validators that have not set weights recently), the
minimum stake to vote, the top-k validator permits (the snapshot's permits are taken
as they stand), the commit-reveal column mask, bonds and their EMA (plain or with
liquid alpha), hence dividends and the validators' emission; the split of emission
between miners and validators, and root stake through the TAO weight.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

# The chain's default Kappa, 32767 of 65535: a hair under half.
KAPPA = 32767 / 65535

Matrix = Mapping[int, Mapping[int, float]]


@dataclass(frozen=True)
class Yuma:
    consensus: dict[int, float]  # miner -> C_j
    clipped: dict[int, dict[int, float]]  # row -> miner -> W̄_ij (every row given)
    incentive: dict[int, float]  # miner -> I_j (sums to 1, or empty)
    vtrust: dict[int, float]  # row -> Σ_j W̄_ij (every row given)
    stake: dict[int, float]  # validator -> its normalised stake (the voting ones)
    weights: dict[int, dict[int, float]]  # row -> normalised, as the epoch masks it


@dataclass(frozen=True)
class History:
    """What the epoch's outdated-weight mask reads: per UID the block of its last weights
    and the block it registered at (0: not known, no mask)."""

    last_update: Mapping[int, int] = field(default_factory=dict)
    registered_at: Mapping[int, int] = field(default_factory=dict)

    def outdated(self, row: int, miner: int) -> bool:
        """A weight set before the miner registered at its UID refers to its previous owner."""
        registered = self.registered_at.get(miner, 0)
        return registered > 0 and self.last_update.get(row, 0) <= registered


def yuma(
    stake: Mapping[int, float],
    weights: Matrix,
    *,
    kappa: float = KAPPA,
    owner: int | None = None,
    history: History = History(),
) -> Yuma:
    """Consensus from `stake` (voting validator -> stake; zero-stake ones do not vote)
    and `weights` (validator -> miner -> weight, any scale per row); `owner` is the
    subnet owner's UID (its self-weight is kept). Rows of UIDs that do not vote are
    clipped against the voters' consensus too, so their vtrust says what they would
    keep if they voted with a negligible stake; UIDs that neither vote nor weigh
    anything (the miners) have no row.

    >>> result = yuma({0: 3.0, 1: 1.0}, {0: {2: 1.0, 3: 1.0}, 1: {2: 1.0}})
    >>> result.consensus, result.vtrust
    ({2: 0.5, 3: 0.5}, {0: 1.0, 1: 0.5})
    """
    voters = _normalise({v: s for v, s in stake.items() if s > 0})
    judged = sorted(v for v in set(weights) | set(voters) if weights.get(v) or v in voters)
    rows = {v: _normalise(_masked(v, weights.get(v, {}), owner, history)) for v in judged}
    votes = {v: rows.get(v, {}) for v in voters}
    miners = sorted({m for row in votes.values() for m in row})
    consensus = weighted_median_col(voters, votes, kappa)
    clipped = {
        v: {m: min(w, consensus.get(m, 0.0)) for m, w in row.items()} for v, row in rows.items()
    }
    ranks = {
        m: math.fsum(voters[v] * clipped.get(v, {}).get(m, 0.0) for v in voters) for m in miners
    }
    return Yuma(
        consensus=consensus,
        clipped=clipped,
        incentive=_normalise(ranks),
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


def weighted_median_col(stake: Mapping[int, float], rows: Matrix, kappa: float) -> dict[int, float]:
    """Per miner of `rows`, the largest weight that validators holding at least `kappa` of
    the (positive, renormalised) stake give it or more: the epoch's consensus step."""
    voters = _normalise({v: s for v, s in stake.items() if s > 0})
    votes = {v: rows.get(v, {}) for v in voters}
    miners = sorted({m for row in rows.values() for m in row})
    return {m: _stake_median(voters, votes, m, kappa) for m in miners}


def _stake_median(stake: Mapping[int, float], rows: Matrix, miner: int, kappa: float) -> float:
    """The largest weight on `miner` that validators holding at least `kappa` of the
    stake give it or more."""
    support = 0.0
    for weight, voter in sorted(((rows[v].get(miner, 0.0), v) for v in rows), reverse=True):
        support += stake[voter]
        if support >= kappa - 1e-12:
            return weight
    return 0.0


def _masked(
    validator: int, row: Mapping[int, float], owner: int | None, history: History
) -> dict[int, float]:
    """The row as the epoch keeps it: no self-weight (but the owner's), nothing outdated."""
    return {
        m: w
        for m, w in row.items()
        if w > 0 and (m != validator or m == owner) and not history.outdated(validator, m)
    }


def _normalise(values: Mapping[int, float]) -> dict[int, float]:
    total = math.fsum(values.values())
    if total <= 0:
        return {}
    return {k: values[k] / total for k in sorted(values)}
