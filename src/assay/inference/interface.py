"""The door to a model as a rep's runner sees it: a metered session per rep, opened by a
service the caller supplies (`assay.inference.proxy.MeteredProxy`), so the runner never
imports the proxy, its HTTP client or its key."""

from __future__ import annotations

from abc import ABC, abstractmethod

from assay.mechanism.spec import InferenceBudget
from assay.records.usage import Body, InferenceUsage
from assay.sandbox.interface import HostService


class MeteredSession(HostService):
    """One rep's proxy: served into its sandbox, metered against the rep's budget."""

    provider: str
    model: str
    slots: int  # connections the in-sandbox relay carries at once

    @abstractmethod
    def close(self) -> InferenceUsage:
        """Stop serving; what the rep spent."""

    @abstractmethod
    def transcript(self) -> tuple[Body, ...]:
        """The request and response bodies kept, by digest (for the store)."""


class InferenceService(ABC):
    """Opens one metered session per rep; picklable, so remote executors carry it."""

    @abstractmethod
    def session(self, *, nonce: str, model: str | None, budget: InferenceBudget) -> MeteredSession:
        """A session for the rep with this nonce, serving `model` (None: the round's)."""
