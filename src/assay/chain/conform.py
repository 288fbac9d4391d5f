"""Weights per hotkey -> a UID vector the chain takes, with what was dropped, what was
conformed, and why.

The UID mapping and the reasons for dropping are the validator's. The quantisation is
the SDK's (`bittensor.intents.weights.normalize`: max-upscaled u16), and so is the
clip to the max-weight limit where the paid UIDs can hold it
(`clip_to_max_weight`). Where they cannot (the top-3 split on a subnet whose limit is
below 1/3, or fewer paid UIDs than `min(subnet_n, min_allowed_weights)`), the vector
is spread over the subnet as the SDK's weight processing spreads it: each paid UID
keeps its share up to the limit, and the excess goes first to this validator's own UID
(whose self-weight the epoch masks), the rest evenly to the fewest other UIDs that
conform. Each such step is a note the dry
run prints. The result is checked with a port of the chain's own admission
(`admission.py`); a vector it would refuse is never returned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from assay.chain.admission import max_upscaled, refusals, within_max_weight
from assay.records.chain import U16_MAX, Dropped, MetagraphSnapshot, UidWeights

# Doublings of the u16 steps taken off the limit when rounding to u16 pushes a share
# over it: many small fillers can each round down, so one step is not always enough,
# and 16 doublings reach past the whole u16 range.
_QUANTUM_RETRIES = 16


class WeightLimitError(ValueError):
    """A vector no conforming can make the subnet take (e.g. a limit below 1/subnet_n)."""


def conform(
    weights: Mapping[str, float],
    snapshot: MetagraphSnapshot,
    *,
    agents: Mapping[str, Sequence[str]] | None = None,
    previously: Mapping[str, int] | None = None,
    dropped: Sequence[Dropped] = (),
    validator: int | None = None,
    version_key: int = 0,
) -> UidWeights:
    """`weights` is hotkey -> weight; `agents` names the agents behind each hotkey;
    `previously` is hotkey -> UID where weights went before (a hotkey there but no
    longer on the snapshot is deregistered, any other absent one unregistered);
    `dropped` carries what was dropped before this step (agents no hotkey owns);
    `validator` is the setting validator's UID, `version_key` the one it sends."""
    agents = agents or {}
    previously = previously or {}
    weights = {hotkey: weights[hotkey] for hotkey in sorted(weights)}
    out = list(dropped)
    registered: dict[int, str] = {}
    for hotkey in weights:
        uid = snapshot.uid_of(hotkey)
        if uid is None:
            reason = "deregistered" if hotkey in previously else "unregistered"
            out.append(_dropped(hotkey, agents, weights[hotkey], reason))
        elif weights[hotkey] > 0:
            registered[uid] = hotkey
    if not registered:
        return UidWeights(uids=(), weights=(), dropped=tuple(out), hotkeys=weights)
    paid = {uid: weights[registered[uid]] for uid in sorted(registered)}
    uids, values, notes = _conformed(paid, snapshot, validator)
    for uid in sorted(set(paid) - set(uids)):
        hotkey = registered[uid]
        out.append(_dropped(hotkey, agents, weights[hotkey], "below quantum"))
    problems = refusals(uids, values, snapshot, validator=validator, version_key=version_key)
    if problems:
        raise WeightLimitError(
            f"subnet {snapshot.netuid} would refuse this round's weights: " + "; ".join(problems)
        )
    return UidWeights(
        uids=tuple(uids),
        weights=tuple(values),
        dropped=tuple(out),
        hotkeys=weights,
        notes=tuple(notes),
    )


def _conformed(
    paid: Mapping[int, float], snapshot: MetagraphSnapshot, validator: int | None
) -> tuple[list[int], list[int], list[str]]:
    """The u16 vector for `paid` (UID -> weight) within the subnet's limits, and notes."""
    hyper = snapshot.hyperparameters
    limit = hyper.max_weight_limit
    needed = min(len(snapshot.neurons), hyper.min_allowed_weights)
    total = math.fsum(paid.values())
    shares = {uid: w / total for uid, w in paid.items()}
    uids, values, notes = _within(shares, snapshot, validator, limit, needed)
    step = 0
    for _ in range(_QUANTUM_RETRIES):
        if limit >= U16_MAX or _within_exactly(max_upscaled(values), limit):
            break
        # u16 rounding put a share over the limit: aim lower, twice as far each time.
        step = min(max(1, 2 * step), limit - 1)
        uids, values, notes = _within(shares, snapshot, validator, limit - step, needed)
        notes.append(f"aimed {step} u16 step(s) under the limit so rounding stays within it")
    return uids, values, notes


def _within_exactly(values: Sequence[int], limit: int) -> bool:
    """Within the limit by the chain's I32F32 check and in exact fractions too, so a
    vector at the limit's edge holds however a fixed-point rounding falls."""
    return within_max_weight(values, limit) and max(values) * U16_MAX <= limit * sum(values)


def _within(
    shares: Mapping[int, float],
    snapshot: MetagraphSnapshot,
    validator: int | None,
    limit: int,
    needed: int,
) -> tuple[list[int], list[int], list[str]]:
    # The SDK is imported here, not with the module: any part of it loads all of it (0.7 s
    # for every command that reaches the validator).
    from bittensor.intents.weights import clip_to_max_weight, normalize

    cap = limit / U16_MAX
    notes: list[str] = []
    uids = sorted(shares)
    floats = [shares[u] for u in uids]
    fits = cap >= 1.0 or len(uids) * cap > 1.0
    if fits and len(uids) >= needed:
        if cap < 1.0 and len(uids) > 1 and max(floats) > cap:
            floats = clip_to_max_weight(floats, cap)
            notes.append(
                f"the largest share is clipped to the max-weight limit {cap:.4f} and the "
                "excess shared among the paid UIDs (the SDK's clip_to_max_weight)"
            )
        kept, values = normalize(uids, floats)
        return kept, values, notes
    return _spread(shares, snapshot, validator, cap, needed)


def _spread(
    shares: Mapping[int, float],
    snapshot: MetagraphSnapshot,
    validator: int | None,
    cap: float,
    needed: int,
) -> tuple[list[int], list[int], list[str]]:
    """The paid UIDs at most `cap` each; the excess first on this validator's own UID
    (the epoch masks a validator's self-weight, so that part is burned rather than paid
    to a miner no one scored, and every validator's row means the same to the epoch),
    the rest evenly over the fewest other UIDs that hold it within `cap` and make up
    `needed` UIDs in all; where every other UID is full, what is left raises the paid
    UIDs below `cap` towards it."""
    kept = {uid: min(share, cap) for uid, share in shares.items()}
    excess = max(0.0, 1.0 - math.fsum(kept.values()))
    why = []
    clipped = sum(1 for share in shares.values() if share > cap)
    if clipped:
        why.append(f"{clipped} paid UID(s) are held at the max-weight limit {cap:.4f}")
    own = validator if validator is not None and snapshot.neuron(validator) else None
    if own is not None and own not in kept and own != snapshot.owner_uid and excess > 0:
        kept[own] = min(excess, cap)
        excess -= kept[own]
        why.append(
            f"{kept[own]:.4f} goes to this validator's own UID {own}, "
            "whose self-weight the epoch masks"
        )
    # Every UID that holds a share may take more up to the cap, this validator's own too.
    holders = set(kept)
    others = sorted(n.uid for n in snapshot.neurons if n.uid not in kept and n.uid != own)
    count = max(needed - len(kept), math.ceil(excess / cap - 1e-9) if excess > 1e-12 else 0)
    fillers = others[:count]
    # A filler takes its even part of the excess, and at least one u16 step of the largest
    # share, so it survives quantisation when it is there only to make up the count.
    floor = max(kept.values()) / U16_MAX
    each = min(max(excess / len(fillers), floor), cap) if fillers else 0.0
    left = excess - each * len(fillers)
    room = math.fsum(cap - kept[uid] for uid in holders)
    if len(kept) + len(fillers) < needed or left > room + 1e-9:
        raise WeightLimitError(
            f"subnet {snapshot.netuid} cannot take these weights: {len(holders)} UIDs held and "
            f"{len(others)} others cannot hold a max-weight limit of {cap:.4f} with "
            f"at least {needed} UIDs"
        )
    if left > 1e-12:
        kept |= {uid: kept[uid] + left * (cap - kept[uid]) / room for uid in holders}
    if fillers:
        why.append(f"{len(fillers)} other UID(s) of the subnet get {each:.6f} each")
    if len(shares) < needed:
        why.append(f"the subnet takes at least {needed} UIDs and {len(shares)} are paid")
    from bittensor.intents.weights import normalize  # with the SDK in _within: why

    merged = kept | dict.fromkeys(fillers, each)
    uids = sorted(merged)
    kept_uids, values = normalize(uids, [merged[u] for u in uids])
    return kept_uids, values, why


def _dropped(hotkey: str, agents: Mapping[str, Sequence[str]], weight: float, why: str) -> Dropped:
    return Dropped(hotkey=hotkey, agents=tuple(agents.get(hotkey, ())), weight=weight, reason=why)
