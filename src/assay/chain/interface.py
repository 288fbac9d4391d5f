"""The chain as the validator uses it: read the metagraph, set one round's weights."""

from __future__ import annotations

from abc import ABC, abstractmethod

from assay.records.chain import MetagraphSnapshot, UidWeights, WeightReceipt


class Chain(ABC):
    """One subnet of one network, seen from one validator hotkey.

    Implementations raise `assay.records.chain.ChainError` when the chain cannot be
    reached or refuses the weights; the caller retries. A receipt is returned only for
    weights the chain took.
    """

    name: str
    version_key: int = 0  # the weights version key this validator sends

    def validator_hotkey(self) -> str | None:
        """The address of the hotkey that sets the weights, when this chain knows it."""
        return None

    @abstractmethod
    def snapshot(self) -> MetagraphSnapshot:
        """The metagraph now: block, netuid, and per UID hotkey, stake, validator
        permit, last update and weights row; with the subnet's weight limits."""

    @abstractmethod
    def set_weights(self, round_id: str, vector: UidWeights) -> WeightReceipt:
        """Send a conformed UID vector (u16 values) as this validator's weights."""
