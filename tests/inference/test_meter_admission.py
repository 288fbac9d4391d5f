"""The meter's request budget under concurrent handler threads, driven directly.

The proxy's handlers call `Meter.admit` when a request arrives and `Meter.reserve`
once its body is read; `reserve` may wait (letting go of the meter's lock) until
requests in flight settle. The test's lock tells it when a request is waiting, so
the interleaving is fixed by events, not by timing.
"""

from __future__ import annotations

import threading
from typing import Any

from assay.inference.meter import Meter, Reservation
from assay.mechanism.spec import InferenceBudget
from assay.records.usage import Exchange, InferenceUsage

BACKSTOP_S = 30.0  # only ends a hang: each wait below is released by the meter itself


class _WatchedLock(threading.Condition):
    """The meter's lock, telling the test when a thread starts waiting on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def _settled(reservation: Reservation) -> Exchange:
    return Exchange(
        seq=reservation.seq,
        status=200,
        request_sha256="0" * 64,
        prompt_tokens=reservation.prompt,
        completion_tokens=1,
    )


def test_a_request_waiting_for_room_keeps_its_place_in_the_request_budget() -> None:
    lock = _WatchedLock()
    budget = InferenceBudget(requests=3, tokens=1000, wall_extension_s=0.0)
    meter = Meter(budget, InferenceUsage(provider="p", model="m"), lock=lock)
    assert meter.admit()
    first = meter.reserve(prompt=100, asked=900)  # holds every token
    assert first is not None
    assert meter.admit()
    granted: list[Any] = []
    # A daemon: were it left waiting by a failed assertion, the test run still ends.
    second = threading.Thread(target=lambda: granted.append(meter.reserve(100, 900)), daemon=True)
    second.start()
    assert lock.waiting.wait(BACKSTOP_S)  # the second request waits for the first to settle

    # Two requests hold places (one forwarded, one waiting): one more may be read.
    assert [meter.admit() for _ in range(3)] == [True, False, False]
    meter.reject(admitted=True)  # that one's body was bad

    meter.settle(first, _settled(first))
    second.join(BACKSTOP_S)
    (reservation,) = granted
    assert reservation is not None
    meter.settle(reservation, _settled(reservation))
    spent = meter.spent
    assert (spent.requests, spent.rejected, spent.refused) == (2, 1, 2)
