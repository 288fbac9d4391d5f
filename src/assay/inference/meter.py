"""One rep's inference spend: admissions, reservations and settlements under one lock.

Exact by construction: a request goes upstream only with a reservation of the
most it can cost (its prompt bound plus the reply cap the upstream is told),
reservations in flight count against the budget beside what is spent, and a
request settles at what the upstream billed, clamped to its reservation (the
whole reservation where the bill is unknown). So the tokens billed never pass
the budget, however many requests are in flight, and every billed token is
recorded.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field

import msgspec

from assay.mechanism.spec import InferenceBudget
from assay.records.usage import Exchange, InferenceUsage

# Bodies kept per rep for the store (beyond this, exchanges keep their digests only).
TRANSCRIPT_BYTES = 8 << 20


@dataclass(frozen=True)
class Reservation:
    seq: int  # order of admission upstream
    prompt: int  # most prompt tokens the request can cost
    completion: int  # the reply cap the upstream is told

    @property
    def tokens(self) -> int:
        return self.prompt + self.completion

    def clamp(self, prompt: int, completion: int) -> tuple[int, int]:
        """What the request is billed: the upstream's count, never more than it could cost."""
        return min(max(prompt, 0), self.prompt), min(max(completion, 0), self.completion)


@dataclass
class Meter:
    """The rep's spend. The counts are the rep's usage record itself, replaced as they move.

    Every request the agent sends counts against the request budget, whether it
    is forwarded (`requests`), refused (`refused`, 429) or rejected (`rejected`,
    4xx): once the budget is used, what follows is refused from its headers
    alone, so a flood costs the validator no parsing."""

    budget: InferenceBudget
    spent: InferenceUsage
    # Admitted and not yet forwarded or turned away: its body being read or checked, or
    # waiting for room. Each holds its place in the request budget until it settles.
    reading: int = 0
    reserved: int = 0  # tokens reserved by requests in flight
    flights: dict[int, Reservation] = field(default_factory=dict)
    closed: bool = False
    frozen: bool = False  # the rep's usage was handed over: late settlements change nothing
    busy_since: float = 0.0
    busy_s: float = 0.0
    exchanges: list[Exchange] = field(default_factory=list)
    bodies: dict[str, str] = field(default_factory=dict)
    body_bytes: int = 0
    lock: threading.Condition = field(default_factory=threading.Condition)

    def _count(self, **more: int) -> None:
        spent = self.spent
        self.spent = msgspec.structs.replace(
            spent, **{name: getattr(spent, name) + n for name, n in more.items()}
        )

    def admit(self) -> bool:
        """Whether a request may be read at all; False is a 429 (counted refused)."""
        with self.lock:
            s = self.spent
            used = s.requests + s.refused + s.rejected + self.reading
            if self.closed or used >= self.budget.requests or s.tokens >= self.budget.tokens:
                self._count(refused=1)
                return False
            self.reading += 1
            return True

    def reject(self, *, admitted: bool) -> None:
        with self.lock:
            self.reading -= admitted
            self._count(rejected=1)

    def reserve(self, prompt: int, asked: int) -> Reservation | None:
        """A reservation for a request with this prompt bound asking for `asked` reply
        tokens, waiting for requests in flight to settle when they hold the rest;
        None (a 429, counted refused) when it can never fit."""
        with self.lock:
            # Still counted as reading while it waits (the wait lets go of the lock), so
            # the requests admitted meanwhile see its place in the budget taken.
            completion = self._wait_for_room(prompt, asked)
            self.reading -= 1
            if completion is None:
                self._count(refused=1)
                return None
            reservation = Reservation(self.spent.requests, prompt, completion)
            self._count(requests=1)
            self.reserved += reservation.tokens
            if not self.flights:
                self.busy_since = time.monotonic()
            self.flights[reservation.seq] = reservation
            return reservation

    def trim(self, reservation: Reservation, prompt: int) -> Reservation:
        """The reservation with its prompt bound lowered to `prompt` (the body measured
        again once its reply cap is final: a smaller cap has no more digits)."""
        trimmed = dataclasses.replace(reservation, prompt=min(prompt, reservation.prompt))
        with self.lock:
            if self.flights.get(reservation.seq) is reservation:
                self.flights[reservation.seq] = trimmed
                self.reserved -= reservation.tokens - trimmed.tokens
                self.lock.notify_all()
        return trimmed

    def _wait_for_room(self, prompt: int, asked: int) -> int | None:
        """The reply cap granted (called with the lock held)."""
        while not self.closed:
            unspent = self.budget.tokens - self.spent.tokens
            if prompt + 1 > unspent:
                return None  # spending only grows: waiting cannot help
            free = unspent - self.reserved
            if free >= prompt + asked or not self.flights:
                return min(asked, free - prompt)
            self.lock.wait()
        return None

    def settle(self, reservation: Reservation, exchange: Exchange) -> None:
        with self.lock:
            if self.frozen:
                return
            self._land(reservation)
            self._count(
                prompt_tokens=exchange.prompt_tokens,
                completion_tokens=exchange.completion_tokens,
                errors=exchange.status != 200,
            )
            if exchange.estimated:
                self.spent = msgspec.structs.replace(self.spent, estimated=True)
            self.exchanges.append(exchange)
            self.lock.notify_all()

    def _land(self, reservation: Reservation) -> None:
        self.reserved -= reservation.tokens
        del self.flights[reservation.seq]
        if not self.flights:
            self.busy_s += time.monotonic() - self.busy_since

    def abandon(self) -> None:
        """Bill every request still in flight its whole reservation, and freeze the counts
        (the rep's end, when a request did not settle in time)."""
        with self.lock:
            for r in list(self.flights.values()):
                self._land(r)
                self._count(prompt_tokens=r.prompt, completion_tokens=r.completion)
                self.spent = msgspec.structs.replace(self.spent, estimated=True)
            self.frozen = True

    def close(self) -> None:
        """No more admissions; requests waiting for room give up."""
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether every admitted request settled within `timeout_s`."""
        with self.lock:
            return self.lock.wait_for(lambda: not self.flights and not self.reading, timeout_s)

    def keep(self, digest: str, data: bytes) -> None:
        """Keep a body for the store, while the rep's transcript allowance lasts."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return
        with self.lock:
            if digest not in self.bodies and self.body_bytes + len(data) <= TRANSCRIPT_BYTES:
                self.bodies[digest] = text
                self.body_bytes += len(data)

    def upstream_s(self) -> float:
        with self.lock:
            ongoing = time.monotonic() - self.busy_since if self.flights else 0.0
            return self.busy_s + ongoing
