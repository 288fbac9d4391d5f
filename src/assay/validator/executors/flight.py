"""The loop every executor shares: at most `slots` reps in flight, each yielded as it ends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Hashable, Iterable
from itertools import islice
from typing import Generic, TypeVar

from assay.runner.rep import RepTask
from assay.validator.executors.interface import Ended

Handle = TypeVar("Handle", bound=Hashable)


class Flight(ABC, Generic[Handle]):
    """How one executor starts a rep, waits for reps and stops them."""

    @abstractmethod
    def submit(self, task: RepTask) -> Handle:
        """Start the rep; return a handle to wait on."""

    @abstractmethod
    def wait_any(self, running: set[Handle]) -> tuple[set[Handle], set[Handle]]:
        """Block until at least one rep ends: (ended, still running)."""

    @abstractmethod
    def result(self, handle: Handle) -> Ended:
        """The ended rep's outcome or fault; raises what the executor raised."""

    @abstractmethod
    def cancel(self, handles: set[Handle]) -> None:
        """Stop these reps; their outcomes are never yielded."""


def stream(
    tasks: Iterable[RepTask], slots: int, flight: Flight[Handle]
) -> Generator[Ended, None, None]:
    """Yield outcomes as reps end. Tasks are drawn only when a slot frees up, so the
    caller decides about each rep (e.g. the agent's round wall cap) as late as possible."""
    pending = iter(tasks)
    running: set[Handle] = set()
    try:
        while True:
            for task in islice(pending, max(0, slots - len(running))):
                running.add(flight.submit(task))
            if not running:
                return
            done, running = flight.wait_any(running)
            for handle in done:
                yield flight.result(handle)
    finally:
        flight.cancel(running)
