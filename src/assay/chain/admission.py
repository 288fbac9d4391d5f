"""The chain's own checks on a weight vector, ported, so nothing it would refuse is sent.

A port of subtensor's `set_weights` admission (`pallets/subtensor/src/subnets/weights.rs`,
`internal_set_weights` and the checks it calls; `epoch/math.rs` for the fixed-point
max-weight test), in the order the chain runs them: equal lengths, at most the
subnet's UID count, the version key, a validator permit (or a lone self-weight, or the
subnet owner), no duplicate UIDs, every UID on the subnet, at least
`min(subnet_n, min_allowed_weights)` UIDs (a lone self-weight is exempt), and after the
chain's max-upscale, no UID above the max-weight limit as I32F32 computes it. What it
leaves to the SDK and the chain at send time: registration, stake and the rate limit
(the SDK preflights them) and the commit-reveal path.

Written by hand: the chain's rules are Rust in the runtime and no Python library
carries them.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.records.chain import U16_MAX, MetagraphSnapshot

_FRACTION_BITS = 32  # I32F32


def is_self_weight(validator: int | None, uids: Sequence[int]) -> bool:
    return validator is not None and len(uids) == 1 and uids[0] == validator


def max_upscaled(values: Sequence[int]) -> list[int]:
    """The chain's `vec_max_upscale_to_u16` in I32F32: the largest value becomes 65535
    (a vector the SDK already max-upscaled comes back unchanged)."""
    top = max(values, default=0)
    if top == 0:
        return list(values)
    half = 1 << (_FRACTION_BITS - 1)
    if top > 32768:
        ratio = (U16_MAX << _FRACTION_BITS) // top  # 65535 / top, truncated
        scaled = [v * ratio for v in values]
    else:
        scaled = [(v * U16_MAX << _FRACTION_BITS) // top for v in values]
    return [min(U16_MAX, (bits + half) >> _FRACTION_BITS) for bits in scaled]


def within_max_weight(values: Sequence[int], limit: int) -> bool:
    """`check_vec_max_limited`: the largest value over the sum, in I32F32 (truncating
    division), is at most `limit / 65535` in I32F32."""
    total = sum(values)
    if not values or total == 0:
        return True
    one = 1 << _FRACTION_BITS
    largest = (max(values) * one) // total
    return largest <= (limit * one) // U16_MAX


def refusals(
    uids: Sequence[int],
    values: Sequence[int],
    snapshot: MetagraphSnapshot,
    *,
    validator: int | None = None,
    version_key: int = 0,
) -> list[str]:
    """Why the chain would refuse this vector from `validator` (its UID, when known), in
    the chain's order; empty when it would take it."""
    hyper = snapshot.hyperparameters
    subnet_n = len(snapshot.neurons)
    problems: list[str] = []
    if len(uids) != len(values):
        problems.append(f"{len(uids)} UIDs but {len(values)} values (WeightVecNotEqualSize)")
    if len(uids) > subnet_n:
        problems.append(
            f"{len(uids)} UIDs on a subnet of {subnet_n} (UidsLengthExceedUidsInSubNet)"
        )
    if hyper.version_key and version_key < hyper.version_key:
        problems.append(
            f"version key {version_key} is below the subnet's {hyper.version_key} "
            "(IncorrectWeightVersionKey)"
        )
    own = snapshot.neuron(validator) if validator is not None else None
    lone_self = is_self_weight(validator, uids)
    if own is not None and not (
        lone_self or own.validator_permit or validator == snapshot.owner_uid
    ):
        problems.append(f"UID {validator} has no validator permit (NeuronNoValidatorPermit)")
    if len(set(uids)) != len(uids):
        problems.append("a UID appears twice (DuplicateUids)")
    missing = sorted(set(uids) - {n.uid for n in snapshot.neurons})
    if missing:
        problems.append(f"UIDs {missing} are not on the subnet (UidVecContainInvalidOne)")
    needed = min(subnet_n, hyper.min_allowed_weights)
    if not lone_self and len(values) < needed:
        problems.append(
            f"{len(values)} weights; subnet {snapshot.netuid} takes at least {needed} "
            "(WeightVecLengthIsLow)"
        )
    limit = hyper.max_weight_limit
    if not lone_self and limit < U16_MAX and not within_max_weight(max_upscaled(values), limit):
        top = max(values) / sum(values)
        problems.append(
            f"the largest share {top:.6f} is above the max-weight limit "
            f"{limit}/{U16_MAX} = {limit / U16_MAX:.6f} (MaxWeightExceeded)"
        )
    return problems
