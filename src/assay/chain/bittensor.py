"""The live chain through the bittensor SDK (the `chain` extra).

Reading: one block-pinned view of the subnet (the neurons, their weight rows and
registration blocks, the subnet's weight limits and epoch hyperparameters, its owner),
with the anchor of a shared draw: the block of the subnet's last epoch and its hash.
Setting: the SDK's `SetWeights` intent, which preflights registration and the rate
limit, signs with the hotkey and sends either plain weights or, where the subnet's
hyperparameters enable commit-reveal, a timelocked commit the chain reveals itself —
the validator never builds either by hand. The vector handed in is already conformed
(`conform.py`), so the SDK's second pass leaves it as it is.

`substrate` swaps the SDK's chain-access backend (its `Substrate` protocol): the
default is the websocket RPC to `network`; tests hand in one that answers as a node
would, at that boundary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from bittensor import BittensorError, Client, SetWeights, Substrate, WalletLike
from bittensor._generated.storage import SubtensorModule as st

from assay.chain.interface import Chain
from assay.records.chain import (
    KAPPA_DEFAULT,
    U16_MAX,
    ChainError,
    Hyperparameters,
    MetagraphSnapshot,
    Neuron,
    UidWeights,
    WeightReceipt,
)

T = TypeVar("T")


class BittensorChain(Chain):
    name = "bittensor"

    def __init__(
        self,
        *,
        network: str,
        netuid: int,
        wallet: WalletLike,
        substrate: Substrate | None = None,
        version_key: int = 0,
    ) -> None:
        self.network = network
        self.netuid = netuid
        self.wallet = wallet
        self.substrate = substrate
        self.version_key = version_key

    def _client(self) -> Client:
        return Client(self.network, substrate=self.substrate)

    def snapshot(self) -> MetagraphSnapshot:
        return _run(self._snapshot())

    def validator_hotkey(self) -> str | None:
        from bittensor import public_view

        try:
            return str(public_view(self.wallet, "hotkey").ss58_address)
        except Exception:  # the SDK's keyfile errors share no base class; the UID is optional
            return None

    def set_weights(self, round_id: str, vector: UidWeights) -> WeightReceipt:
        return _run(self._set_weights(round_id, vector))

    async def _snapshot(self) -> MetagraphSnapshot:
        async with self._client() as client:
            view = await client.at()
            neurons = await view.read("neurons", netuid=self.netuid)
            rows: dict[int, dict[int, float]] = await view.read("weights", netuid=self.netuid)
            registered = dict(await view.query_map(st.BlockAtRegistration, [self.netuid]))
            hyper = await _hyperparameters(view, self.netuid)
            owner = await view.query(st.SubnetOwnerHotkey, [self.netuid])
            anchor, anchor_hash = await _anchor(view, self.netuid)
        if not neurons:
            raise ChainError(f"subnet {self.netuid} has no neurons on {self.network}")
        return MetagraphSnapshot(
            netuid=self.netuid,
            block=view.block,
            neurons=tuple(
                Neuron(
                    uid=n.uid,
                    hotkey=n.hotkey,
                    stake=float(n.total_stake.alpha),
                    validator_permit=n.validator_permit,
                    last_update=n.last_update,
                    weights=rows.get(n.uid, {}),
                    registered_at=int(registered.get(n.uid) or 0),
                )
                for n in neurons
            ),
            hyperparameters=hyper,
            anchor_block=anchor,
            block_hash=anchor_hash,
            owner_hotkey=str(owner) if owner else None,
        )

    async def _set_weights(self, round_id: str, vector: UidWeights) -> WeightReceipt:
        intent = SetWeights(
            netuid=self.netuid,
            uids=list(vector.uids),
            weights=[float(w) for w in vector.weights],
            version_key=self.version_key,
        )
        async with self._client() as client:
            block = await client.block()
            result = await client.execute(intent, self.wallet)
        if not result.success:
            raise ChainError(f"the chain refused the weights: {result.message}")
        reveal_round = result.data.get("reveal_round")
        return vector.receipt(
            round_id,
            self.netuid,
            success=True,
            message=result.message,
            block=block,
            block_hash=result.block_hash,
            extrinsic_id=result.extrinsic_id,
            commit_reveal=reveal_round is not None,
            reveal_round=None if reveal_round is None else int(reveal_round),
        )


async def _hyperparameters(view: Any, netuid: int) -> Hyperparameters:
    limit, minimum, commit_reveal, rate, tempo, kappa, version = await asyncio.gather(
        view.query(st.MaxWeightsLimit, [netuid]),
        view.query(st.MinAllowedWeights, [netuid]),
        view.query(st.CommitRevealWeightsEnabled, [netuid]),
        view.query(st.WeightsSetRateLimit, [netuid]),
        view.query(st.Tempo, [netuid]),
        view.query(st.Kappa, [netuid]),
        view.query(st.WeightsVersionKey, [netuid]),
    )
    return Hyperparameters(
        max_weight_limit=U16_MAX if limit is None else int(limit),
        min_allowed_weights=int(minimum or 0),
        commit_reveal=bool(commit_reveal),
        weights_rate_limit=int(rate or 0),
        tempo=int(tempo or 0),
        kappa=KAPPA_DEFAULT if kappa is None else int(kappa),
        version_key=int(version or 0),
    )


async def _anchor(view: Any, netuid: int) -> tuple[int, str]:
    """The block of the subnet's last epoch and its hash: the block every validator
    reading the subnet during this tempo sees alike, whatever block it reads at, and
    whose hash no one knew before it was made."""
    last = await view.query(st.LastEpochBlock, [netuid])
    block = min(int(last or 0), view.block)
    info = await view.block_info(block)
    if info is None or not info.hash:
        raise ChainError(f"the chain has no hash for block {block}, subnet {netuid}'s last epoch")
    return block, str(info.hash)


def _run(work: Coroutine[Any, Any, T]) -> T:
    """The SDK is async; the validator calls it one request at a time. Every failure of
    the SDK (connection, chain refusal, preflight) is a `ChainError` the caller retries."""
    try:
        return asyncio.run(work)
    except BittensorError as exc:
        raise ChainError(str(exc)) from exc
    except (OSError, TimeoutError) as exc:
        raise ChainError(f"cannot reach the chain: {exc}") from exc
