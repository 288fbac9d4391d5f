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

import hashlib
import hmac
import json
import math
import os
import socket
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from assay.inference.config import Upstream
from assay.inference.interface import InferenceService, MeteredSession
from assay.mechanism.spec import InferenceBudget
from assay.records.usage import Body, Exchange, InferenceUsage
from assay.sandbox.interface import InfrastructureError

SOCKET_NAME = "inference.sock"
MAX_REQUEST_BYTES = 1 << 20
MAX_RESPONSE_BYTES = 4 << 20
HANDLERS_PER_REP = 4
REQUEST_READ_TIMEOUT_S = 10.0  # a client that does not finish sending its request is dropped
BYTES_PER_TOKEN = 4  # the count when an upstream reports no usage
# Bodies kept per rep for the store (beyond this, exchanges keep their digests only).
TRANSCRIPT_BYTES = 8 << 20
_ACCEPT_POLL_S = 0.25
CHAT_PATH = "/v1/chat/completions"
_JSON = {"Content-Type": "application/json"}
MODELS_PATH = "/v1/models"


class _UpstreamFailed(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Gateway:
    """The pooled HTTP client to one upstream, shared by every rep of a validator process."""

    def __init__(self, upstream: Upstream) -> None:
        import httpx  # here, not at the top: every command imports this module, few serve a model

        self.config = upstream.config
        timeout = self.config.timeout_s
        headers = {"Authorization": f"Bearer {upstream.key}"} if upstream.key else {}
        self._client = httpx.Client(
            base_url=self.config.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            follow_redirects=False,  # a redirect could carry the key to another host
        )

    def chat(self, body: bytes) -> bytes:
        """The upstream's answer to a chat request; `_UpstreamFailed` (502/504) otherwise.

        The whole exchange, not only each read, is held to the timeout, so a
        server dripping bytes cannot keep a rep waiting."""
        import httpx

        deadline = time.monotonic() + self.config.timeout_s
        try:
            with self._client.stream(
                "POST",
                "/chat/completions",
                content=body,
                headers={"Content-Type": "application/json"},
            ) as response:
                if response.status_code != 200:
                    # Never relayed: a provider's error text can quote (part of) the key.
                    raise _UpstreamFailed(502, f"upstream answered HTTP {response.status_code}")
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise _UpstreamFailed(502, "upstream answer exceeds the size cap")
                    if time.monotonic() > deadline:
                        raise _UpstreamFailed(504, "upstream did not answer in time")
                    chunks.append(chunk)
                return b"".join(chunks)
        except httpx.TimeoutException:
            raise _UpstreamFailed(504, "upstream did not answer in time") from None
        except httpx.HTTPError as exc:
            raise _UpstreamFailed(502, f"upstream unreachable ({type(exc).__name__})") from None


@cache
def gateway(upstream: Upstream) -> Gateway:
    return Gateway(upstream)


def _error(status: int, message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()


def _tokens(text_bytes: int) -> int:
    return math.ceil(text_bytes / BYTES_PER_TOKEN)


def _count(answer: Any, request_bytes: int) -> tuple[int, int, bool]:
    """(prompt, completion, estimated): the upstream's `usage`, else bytes / 4."""
    usage = answer.get("usage") if isinstance(answer, dict) else None
    if isinstance(usage, dict):
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int) and min(prompt, completion) >= 0:
            return prompt, completion, False
    said = 0
    for choice in (answer.get("choices") if isinstance(answer, dict) else None) or ():
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            said += len(content.encode())
    return _tokens(request_bytes), _tokens(said), True


@dataclass
class _Meter:
    """The rep's spend, under one lock: budgets are checked and reserved atomically.
    The counts are the rep's usage record itself, replaced as they move."""

    budget: InferenceBudget
    spent: InferenceUsage
    in_flight: int = 0
    busy_since: float = 0.0
    busy_s: float = 0.0
    exchanges: list[Exchange] = field(default_factory=list)
    bodies: dict[str, str] = field(default_factory=dict)
    body_bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self) -> tuple[int, int] | None:
        """(sequence number, tokens left) for a request going upstream; None when over budget."""
        with self.lock:
            spent = self.spent
            if spent.requests >= self.budget.requests or spent.tokens >= self.budget.tokens:
                self.spent = msgspec.structs.replace(spent, refused=spent.refused + 1)
                return None
            self.spent = msgspec.structs.replace(spent, requests=spent.requests + 1)
            if self.in_flight == 0:
                self.busy_since = time.monotonic()
            self.in_flight += 1
            return spent.requests, self.budget.tokens - spent.tokens

    def settle(self, exchange: Exchange) -> None:
        with self.lock:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.busy_s += time.monotonic() - self.busy_since
            spent = self.spent
            self.spent = msgspec.structs.replace(
                spent,
                prompt_tokens=spent.prompt_tokens + exchange.prompt_tokens,
                completion_tokens=spent.completion_tokens + exchange.completion_tokens,
                estimated=spent.estimated or exchange.estimated,
                errors=spent.errors + (exchange.status != 200),
            )
            self.exchanges.append(exchange)

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

    def reject(self) -> None:
        with self.lock:
            self.spent = msgspec.structs.replace(self.spent, rejected=self.spent.rejected + 1)

    def upstream_s(self) -> float:
        with self.lock:
            ongoing = time.monotonic() - self.busy_since if self.in_flight else 0.0
            return self.busy_s + ongoing


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
        self.meter = _Meter(budget, InferenceUsage(provider=self.provider, model=model))
        # Enough for every budgeted request plus the 429s telling the agent it is out.
        self.connections_cap = 2 * budget.requests + 64
        self._slots = threading.BoundedSemaphore(HANDLERS_PER_REP)
        self._listener: socket.socket | None = None
        self._closed = threading.Event()
        self._acceptor: threading.Thread | None = None

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
        counted (they were reserved) but their exchanges are not recorded."""
        self._closed.set()
        if self._listener is not None:
            with suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept now
        if self._acceptor is not None:
            self._acceptor.join()
        if self._listener is not None:
            self._listener.close()
        meter = self.meter
        upstream_s = meter.upstream_s()  # with requests still in flight when the rep ended
        with meter.lock:
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

    def chat(self, raw: bytes) -> tuple[int, bytes]:
        try:
            request = json.loads(raw)
        except (ValueError, RecursionError):
            request = None
        if not isinstance(request, dict):
            self.meter.reject()
            return 400, _error(400, "the body must be a JSON object", "invalid_request_error")
        if request.get("stream"):
            self.meter.reject()
            return 400, _error(400, "streaming is not supported", "invalid_request_error")
        reservation = self.meter.reserve()
        if reservation is None:
            message = (
                f"inference budget exhausted: {self.budget.requests} requests and "
                f"{self.budget.tokens} tokens per rep"
            )
            return 429, _error(429, message, "budget_exceeded")
        seq, tokens_left = reservation
        # The validator decides the model, and a reply limit the agent sets may not pass
        # the token budget. None is added: some models refuse `max_tokens` altogether.
        request["model"] = self.model
        for limit in ("max_tokens", "max_completion_tokens"):
            asked = request.get(limit)
            if isinstance(asked, int) and not isinstance(asked, bool):
                request[limit] = max(1, min(asked, tokens_left))
        body = json.dumps(request, ensure_ascii=False).encode()
        started = time.monotonic()
        status, answer, usage = 200, b"", (0, 0, False)
        try:
            answer = self.gateway.chat(body)
            usage = _count(json.loads(answer), len(body))
        except _UpstreamFailed as exc:
            status, answer = exc.status, _error(exc.status, str(exc), "upstream_error")
        except (ValueError, RecursionError):
            status, answer = 502, _error(502, "upstream answer is not JSON", "upstream_error")
        asked = hashlib.sha256(body).hexdigest()
        said = hashlib.sha256(answer).hexdigest() if status == 200 else None
        self.meter.keep(asked, body)
        if said is not None:
            self.meter.keep(said, answer)
        self.meter.settle(
            Exchange(
                seq=seq,
                status=status,
                request_sha256=asked,
                response_sha256=said,
                prompt_tokens=usage[0],
                completion_tokens=usage[1],
                estimated=usage[2],
                upstream_s=round(time.monotonic() - started, 3),
            )
        )
        return status, answer


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

    def _route(self, path: str) -> bool:
        """True when the request may go on: the route exists and the nonce is presented."""
        if urlsplit(self.path).path != path:
            self.session.meter.reject()
            self._send(404, _error(404, f"only {CHAT_PATH} and {MODELS_PATH}", "not_found"))
            return False
        if not self.session.authorized(
            self.headers.get("Authorization"), self.headers.get("X-Phylax-Nonce")
        ):
            self.session.meter.reject()
            self._send(401, _error(401, "present the rep's nonce as the bearer token", "auth"))
            return False
        return True

    def do_GET(self) -> None:
        if self._route(MODELS_PATH):
            self._send(200, self.session.models())

    def do_POST(self) -> None:
        if not self._route(CHAT_PATH):
            return
        try:
            length = int(self.headers.get("Content-Length") or -1)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_REQUEST_BYTES:
            self.session.meter.reject()
            self._send(413, _error(413, f"send a Content-Length up to {MAX_REQUEST_BYTES}", "size"))
            return
        self._send(*self.session.chat(self.rfile.read(length)))


@dataclass(frozen=True)
class MeteredProxy(InferenceService):
    """The round's upstream, served to each rep through its own `ProxySession`."""

    upstream: Upstream

    def session(self, *, nonce: str, model: str | None, budget: InferenceBudget) -> ProxySession:
        served = model or self.upstream.config.model
        return ProxySession(self.upstream, nonce=nonce, model=served, budget=budget)
