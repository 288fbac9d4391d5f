"""The metered proxy: one Unix socket per rep, served by the validator.

Why a Unix socket: the sandbox keeps its empty network namespace, so no
address is reachable from inside but this one file, bound into that one
sandbox. The socket is the rep's identity (a flood on it reaches no other
rep's meter); the nonce is checked as well, because Phylax agents send it.
Inside, the shim relays `127.0.0.1:PORT` to the socket, so plain HTTP clients
work unchanged.

Served: `POST /v1/chat/completions` and `GET /v1/models`; anything else is 404.
Each rep gets at most `HANDLERS_PER_REP` requests in service at once (the rest
wait in the socket's backlog, costing the validator nothing) and at most
`connections_cap` connections in all, so a flooding agent spends its own
wall time, never another rep's or the validator's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import queue
import socket
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from assay.inference.config import Upstream
from assay.inference.contract import (
    ChatRequest,
    RequestRefused,
    parse_request,
    prompt_bound,
    refuse_early,
)
from assay.inference.gateway import (
    Answer,
    Billing,
    Flight,
    Gateway,
    StreamReader,
    error_body,
    tokens_of,
)
from assay.inference.interface import InferenceService, MeteredSession
from assay.inference.meter import Meter, Reservation
from assay.mechanism.spec import InferenceBudget
from assay.records.usage import Body, Exchange, InferenceUsage
from assay.sandbox.interface import InfrastructureError

SOCKET_NAME = "inference.sock"
MAX_REQUEST_BYTES = 1 << 20
HANDLERS_PER_REP = 4
REQUEST_READ_TIMEOUT_S = 10.0  # a client that does not finish sending its request is dropped
CLOSE_WAIT_S = 10.0  # the rep's end waits this long for cancelled requests to settle
_HEAD_BYTES = 64  # read first: enough to refuse a body that is not an object
_ACCEPT_POLL_S = 0.25
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"


@cache
def gateway(upstream: Upstream) -> Gateway:
    return Gateway(upstream)


class ProxySession(MeteredSession):
    """One rep's proxy: its socket, its meter and its budget."""

    socket_name = SOCKET_NAME
    slots = 2 * HANDLERS_PER_REP

    def __init__(
        self, upstream: Upstream, *, nonce: str, model: str, budget: InferenceBudget
    ) -> None:
        self.gateway = gateway(upstream)
        self.provider = upstream.config.provider
        self.nonce = nonce
        self.model = model
        self.budget = budget
        self.meter = Meter(budget, InferenceUsage(provider=self.provider, model=model))
        # Enough for every budgeted request plus the 429s telling the agent it is out.
        self.connections_cap = 2 * budget.requests + 64
        self._slots = threading.BoundedSemaphore(HANDLERS_PER_REP)
        self._listener: socket.socket | None = None
        self._closed = threading.Event()
        self._acceptor: threading.Thread | None = None
        self._flights: set[Flight] = set()
        self._flights_lock = threading.Lock()

    # MeteredSession ----------------------------------------------------------------

    def listen(self, path: Path) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        directory = -1
        try:
            # Bound through the directory's descriptor: run directories can be deeper
            # than the 107 bytes a socket address holds.
            directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            listener.bind(f"/proc/self/fd/{directory}/{path.name}")
            listener.listen(HANDLERS_PER_REP * 2)
            listener.settimeout(_ACCEPT_POLL_S)
        except OSError as exc:
            listener.close()
            raise InfrastructureError(f"cannot start the inference proxy: {exc}") from exc
        finally:
            if directory >= 0:
                os.close(directory)
        self._listener = listener
        self._acceptor = threading.Thread(
            target=self._accept_loop, name="assay-inference", daemon=True
        )
        self._acceptor.start()

    def extension_s(self) -> float:
        return min(self.meter.upstream_s(), self.budget.wall_extension_s)

    def transcript(self) -> tuple[Body, ...]:
        """The bodies kept so far, by digest (what the store keeps beside the usage)."""
        with self.meter.lock:
            return tuple(Body(sha256=d, text=t) for d, t in sorted(self.meter.bodies.items()))

    # lifecycle ----------------------------------------------------------------------

    def close(self) -> InferenceUsage:
        """Stop serving and return what the rep spent. Requests still upstream are
        cancelled and billed their whole reservation (the upstream may bill them), so
        none outlives its rep and the usage is final when this returns."""
        self._closed.set()
        if self._listener is not None:
            with suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept now
        if self._acceptor is not None:
            self._acceptor.join()
        if self._listener is not None:
            self._listener.close()
        meter = self.meter
        meter.close()
        with self._flights_lock:
            for flight in self._flights:
                flight.cancel()
        if not meter.wait_idle(CLOSE_WAIT_S):
            meter.abandon()
        upstream_s = meter.upstream_s()
        with meter.lock:
            meter.frozen = True
            return msgspec.structs.replace(
                meter.spent,
                upstream_s=round(upstream_s, 3),
                wall_extension_s=round(min(upstream_s, self.budget.wall_extension_s), 3),
                exchanges=tuple(sorted(meter.exchanges, key=lambda e: e.seq)),
            )

    def _accept_loop(self) -> None:
        assert self._listener is not None
        accepted = 0
        while not self._closed.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted += 1
            if accepted > self.connections_cap:
                connection.close()
                continue
            # Waiting here leaves further connections in the backlog: backpressure on
            # this rep alone.
            while not self._slots.acquire(timeout=_ACCEPT_POLL_S):
                if self._closed.is_set():
                    connection.close()
                    return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            _Handler(connection, "sandbox", self)
        except Exception:  # whatever the agent sent, only its connection ends
            pass
        finally:
            with suppress(OSError):
                connection.close()
            self._slots.release()

    # requests ------------------------------------------------------------------------

    def authorized(self, authorization: str | None, phylax_nonce: str | None) -> bool:
        presented = [phylax_nonce or ""]
        if authorization and authorization.startswith("Bearer "):
            presented.append(authorization.removeprefix("Bearer ").strip())
        return any(hmac.compare_digest(p.strip().encode(), self.nonce.encode()) for p in presented)

    def models(self) -> bytes:
        entry = {"id": self.model, "object": "model", "owned_by": self.provider}
        return json.dumps({"object": "list", "data": [entry]}).encode()

    def exhausted(self) -> bytes:
        message = (
            f"inference budget exhausted: {self.budget.requests} requests and "
            f"{self.meter.budget.tokens} tokens per rep"
        )
        return error_body(429, message, "budget_exceeded")

    def reserve(self, request: ChatRequest) -> tuple[Reservation, bytes] | None:
        """The reservation and the body the upstream receives; None when over budget.
        The validator decides the model, and the reply is capped at what is left."""
        asked = request.asked_completion
        prompt = prompt_bound(request.upstream(self.model, asked))
        reservation = self.meter.reserve(prompt, asked)
        if reservation is None:
            return None
        body = request.upstream(self.model, reservation.completion)
        return self.meter.trim(reservation, prompt_bound(body)), body

    def forward(self, body: bytes, request: ChatRequest, reply: Reply) -> Answer:
        """Send the body upstream and wait for its answer (streamed to `reply` as it comes)."""
        stream = StreamReader(request.wants_usage) if request.stream else None
        flight = self.gateway.send(body, stream, reply.events if stream else None)
        with self._flights_lock:
            self._flights.add(flight)
        if self._closed.is_set():
            flight.cancel()  # the rep ended while this request was being admitted
        try:
            if stream is not None:
                reply.relay()
            return flight.wait()
        finally:
            with self._flights_lock:
                self._flights.discard(flight)

    def settle(self, reservation: Reservation, body: bytes, answer: Answer, started: float) -> None:
        asked = hashlib.sha256(body).hexdigest()
        said = hashlib.sha256(answer.body).hexdigest() if answer.status == 200 else None
        self.meter.keep(asked, body)
        if said is not None:
            self.meter.keep(said, answer.body)
        prompt, completion, estimated = _billed(reservation, body, answer)
        exchange = Exchange(
            seq=reservation.seq,
            status=answer.status,
            request_sha256=asked,
            response_sha256=said,
            prompt_tokens=prompt,
            completion_tokens=completion,
            estimated=estimated,
            upstream_s=round(time.monotonic() - started, 3),
        )
        self.meter.settle(reservation, exchange)


def _billed(reservation: Reservation, body: bytes, answer: Answer) -> tuple[int, int, bool]:
    """(prompt, completion, estimated) tokens an exchange is billed, within its reservation."""
    if answer.billing is Billing.NONE:
        return 0, 0, False
    if answer.billing is Billing.UNKNOWN:
        return reservation.prompt, reservation.completion, True
    if answer.reported is not None:
        return (*reservation.clamp(*answer.reported), False)
    return (*reservation.clamp(tokens_of(len(body)), answer.said_tokens), True)


@dataclass
class Reply:
    """The agent's side of a streamed answer: events are queued by the gateway's loop
    (which must never block on a slow agent) and written by the handler's thread."""

    handler: _Handler
    started: bool = False
    events_queue: queue.SimpleQueue[bytes | None] = dataclasses.field(
        default_factory=queue.SimpleQueue
    )

    def events(self, event: bytes | None) -> None:
        self.events_queue.put(event)

    def relay(self) -> None:
        """Write events until the stream ends; an agent that stops reading only stops
        getting them (the answer is still awaited and billed)."""
        writing = True
        while (event := self.events_queue.get()) is not None:
            if not writing:
                continue
            try:
                if not self.started:
                    self.handler.start_stream()
                    self.started = True
                self.handler.wfile.write(event)
            except OSError:
                writing = False


class _Handler(BaseHTTPRequestHandler):
    """One HTTP request from the sandbox (HTTP/1.0: one request per connection)."""

    server: Any
    timeout = REQUEST_READ_TIMEOUT_S

    def __init__(self, connection: socket.socket, address: str, session: ProxySession) -> None:
        self.session = session
        super().__init__(connection, address, session)  # type: ignore[arg-type]

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: the agent controls these lines."""

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def _route(self, path: str) -> bool:
        """True when the request may go on: the route exists and the nonce is presented."""
        if urlsplit(self.path).path != path:
            self.session.meter.reject(admitted=False)
            self._send(404, error_body(404, f"only {CHAT_PATH} and {MODELS_PATH}", "not_found"))
            return False
        if not self.session.authorized(
            self.headers.get("Authorization"), self.headers.get("X-Phylax-Nonce")
        ):
            self.session.meter.reject(admitted=False)
            self._send(401, error_body(401, "present the rep's nonce as the bearer token", "auth"))
            return False
        return True

    def do_GET(self) -> None:
        if self._route(MODELS_PATH):
            self._send(200, self.session.models())

    def do_POST(self) -> None:
        if not self._route(CHAT_PATH):
            return
        if not self.session.meter.admit():  # from the headers alone: no body is read
            self._send(429, self.session.exhausted())
            return
        try:
            request = self._read_request()
        except RequestRefused as exc:
            self.session.meter.reject(admitted=True)
            status = 413 if isinstance(exc, _TooLarge) else 400
            self._send(status, error_body(status, str(exc), "invalid_request_error"))
            return
        except OSError:  # the agent's connection broke, or it stopped sending
            self.session.meter.reject(admitted=True)
            return
        reserved = self.session.reserve(request)
        if reserved is None:
            self._send(429, self.session.exhausted())
            return
        self._exchange(request, *reserved)

    def _read_request(self) -> ChatRequest:
        """The body, read only as far as it can be refused: its length first, then its
        first bytes, then the rest (at most `MAX_REQUEST_BYTES`)."""
        try:
            length = int(self.headers.get("Content-Length") or -1)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_REQUEST_BYTES:
            raise _TooLarge(f"send a Content-Length up to {MAX_REQUEST_BYTES}")
        head = self.rfile.read1(min(length, _HEAD_BYTES)) if length else b""
        refuse_early(head)
        return parse_request(head + self.rfile.read(length - len(head)))

    def _exchange(self, request: ChatRequest, reservation: Reservation, body: bytes) -> None:
        started = time.monotonic()
        reply = Reply(self)
        answer = Answer(499, b"", Billing.UNKNOWN)
        try:
            answer = self.session.forward(body, request, reply)
        finally:  # whatever happened to the agent's connection, the request is billed
            self.session.settle(reservation, body, answer, started)
        if not reply.started:
            self._send(answer.status, answer.body)


class _TooLarge(RequestRefused):
    pass


@dataclass(frozen=True)
class MeteredProxy(InferenceService):
    """The round's upstream, served to each rep through its own `ProxySession`."""

    upstream: Upstream

    def session(self, *, nonce: str, model: str | None, budget: InferenceBudget) -> ProxySession:
        config = self.upstream.config
        served = model or config.model
        return ProxySession(
            self.upstream, nonce=nonce, model=served, budget=config.rep_budget(budget)
        )
