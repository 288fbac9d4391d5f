"""The live chain through the bittensor SDK (the `chain` extra).

Reading: one block-pinned view of the subnet (the neurons, their weight rows, the
subnet's weight limits). Setting: the SDK's `SetWeights` intent, which preflights
registration and the rate limit, signs with the hotkey and sends either plain weights or,
where the subnet's hyperparameters enable commit-reveal, a timelocked commit the chain
reveals itself — the validator never builds either by hand. The vector handed in is
already conformed (`conform.py`, the SDK's own clip and quantisation), so the SDK's
second pass leaves it as it is.

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

    def set_weights(self, round_id: str, vector: UidWeights) -> WeightReceipt:
        return _run(self._set_weights(round_id, vector))

    async def _snapshot(self) -> MetagraphSnapshot:
        async with self._client() as client:
            view = await client.at()
            neurons = await view.read("neurons", netuid=self.netuid)
            rows: dict[int, dict[int, float]] = await view.read("weights", netuid=self.netuid)
            hyper = await _hyperparameters(view, self.netuid)
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
                )
                for n in neurons
            ),
            hyperparameters=hyper,
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
    limit, minimum, commit_reveal, rate, tempo = await asyncio.gather(
        view.query(st.MaxWeightsLimit, [netuid]),
        view.query(st.MinAllowedWeights, [netuid]),
        view.query(st.CommitRevealWeightsEnabled, [netuid]),
        view.query(st.WeightsSetRateLimit, [netuid]),
        view.query(st.Tempo, [netuid]),
    )
    return Hyperparameters(
        max_weight_limit=U16_MAX if limit is None else int(limit),
        min_allowed_weights=int(minimum or 0),
        commit_reveal=bool(commit_reveal),
        weights_rate_limit=int(rate or 0),
        tempo=int(tempo or 0),
    )


def _run(work: Coroutine[Any, Any, T]) -> T:
    """The SDK is async; the validator calls it one request at a time. Every failure of
    the SDK (connection, chain refusal, preflight) is a `ChainError` the caller retries."""
    try:
        return asyncio.run(work)
    except BittensorError as exc:
        raise ChainError(str(exc)) from exc
    except (OSError, TimeoutError) as exc:
        raise ChainError(f"cannot reach the chain: {exc}") from exc
