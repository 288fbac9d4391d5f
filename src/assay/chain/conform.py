"""Weights per hotkey -> the UID vector the chain takes, with what was dropped and why.

The clip to the subnet's max-weight limit and the u16 quantisation are the SDK's own
(`bittensor.intents.weights`), so a dry run shows exactly the values the SDK would
send; the UID mapping and the reasons for dropping are the validator's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bittensor.intents.weights import clip_to_max_weight, normalize

from assay.records.chain import U16_MAX, Dropped, MetagraphSnapshot, UidWeights


class WeightLimitError(ValueError):
    """A vector the subnet would refuse (too few UIDs for its min-allowed-weights)."""


def conform(
    weights: Mapping[str, float],
    snapshot: MetagraphSnapshot,
    *,
    agents: Mapping[str, Sequence[str]] | None = None,
    previously: Mapping[str, int] | None = None,
    dropped: Sequence[Dropped] = (),
) -> UidWeights:
    """`weights` is hotkey -> weight; `agents` names the agents behind each hotkey;
    `previously` is hotkey -> UID where weights went before (a hotkey there but no
    longer on the snapshot is deregistered, any other absent one unregistered);
    `dropped` carries what was dropped before this step (agents no hotkey owns)."""
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
    uids = sorted(registered)
    if not uids:
        return UidWeights(uids=(), weights=(), dropped=tuple(out), hotkeys=weights)
    floats = [weights[registered[u]] for u in uids]
    limit = snapshot.hyperparameters.max_weight_limit
    if len(floats) > 1 and limit < U16_MAX:
        floats = clip_to_max_weight(floats, limit / U16_MAX)
    kept_uids, values = normalize(uids, floats)
    for uid in sorted(set(uids) - set(kept_uids)):
        hotkey = registered[uid]
        out.append(_dropped(hotkey, agents, weights[hotkey], "below quantum"))
    minimum = snapshot.hyperparameters.min_allowed_weights
    if len(kept_uids) < minimum:
        raise WeightLimitError(
            f"subnet {snapshot.netuid} takes at least {minimum} weights; "
            f"this round has {len(kept_uids)} registered UIDs with weight"
        )
    return UidWeights(
        uids=tuple(kept_uids), weights=tuple(values), dropped=tuple(out), hotkeys=weights
    )


def _dropped(hotkey: str, agents: Mapping[str, Sequence[str]], weight: float, why: str) -> Dropped:
    return Dropped(hotkey=hotkey, agents=tuple(agents.get(hotkey, ())), weight=weight, reason=why)
