"""The pooled client to one upstream, shared by every rep of a validator process.

Requests run as tasks on one event loop in its own thread, so a rep's end can
cancel its requests still upstream (a blocked synchronous read cannot be
interrupted) and their connections go back to the pool before the next rep.
Transient failures the upstream bills nothing for (429 and 5xx answers, a
connection refused or reset before the request was sent) are retried with
backoff within the request's time; a failure after the request was sent is not,
since the upstream may have billed it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import json
import math
import re
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from assay.inference.config import Upstream

MAX_RESPONSE_BYTES = 4 << 20
BYTES_PER_TOKEN = 4  # the count when an upstream reports no usage
_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
_RETRIES = 3  # after the first attempt: 0.5, 1 and 2 s apart, so a dead upstream is a 502 in ~4 s
_FIRST_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 8.0
_EVENT_END = re.compile(rb"\r?\n\r?\n")
_JSON = {"Content-Type": "application/json"}
CANCELLED = 499  # the exchange's status when the rep ended with it still upstream

Emit = Callable[[bytes | None], None]  # a stream's events for the agent; None ends them


class Billing(enum.Enum):
    NONE = "none"  # the upstream never served it (an error status, never reached)
    USAGE = "usage"  # served: billed its reported usage, or its counted bytes
    UNKNOWN = "unknown"  # may have been billed any amount: billed the whole reservation


@dataclass(frozen=True)
class Answer:
    status: int  # what the agent receives
    body: bytes  # the JSON answer or error; for a stream, the events relayed
    billing: Billing
    reported: tuple[int, int] | None = None  # the upstream's (prompt, completion) tokens
    said_bytes: int = 0  # the reply's text, for counting when nothing is reported

    @property
    def said_tokens(self) -> int:
        return tokens_of(self.said_bytes)


def tokens_of(text_bytes: int) -> int:
    return math.ceil(text_bytes / BYTES_PER_TOKEN)


def error_body(status: int, message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()


def _failed(status: int, message: str, billing: Billing) -> Answer:
    # Never the upstream's own error text: a provider's can quote (part of) the key.
    return Answer(status, error_body(status, message, "upstream_error"), billing)


class _Transient(Exception):
    """A failure the upstream bills nothing for: worth another attempt."""

    def __init__(self, message: str, retry_after_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _reported(answer: Any) -> tuple[int, int] | None:
    usage = answer.get("usage") if isinstance(answer, dict) else None
    if not isinstance(usage, dict):
        return None
    counts = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if all(type(c) is int and c >= 0 for c in counts):
        return counts  # type: ignore[return-value]
    return None


def _said(answer: Any, part: str) -> int:
    """Bytes of reply text (content, reasoning, tool-call arguments) in `choices[].<part>`."""
    said = 0
    for choice in (answer.get("choices") if isinstance(answer, dict) else None) or ():
        message = choice.get(part) if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        texts = [message.get("content"), message.get("reasoning_content")]
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            texts.append(function.get("arguments") if isinstance(function, dict) else None)
        said += sum(len(t.encode()) for t in texts if isinstance(t, str))
    return said


@dataclass
class StreamReader:
    """Server-sent events from the upstream: relayed to the agent event by event, read
    for the final usage chunk and the reply's text. The proxy always asks for the usage
    chunk; the agent sees it only when it asked too."""

    wants_usage: bool
    pending: bytes = b""
    reported: tuple[int, int] | None = None
    said_bytes: int = 0
    relayed: list[bytes] = field(default_factory=list)

    def feed(self, data: bytes) -> list[bytes]:
        events = _EVENT_END.split(self.pending + data)
        self.pending = events.pop()
        out = [event + b"\n\n" for event in events if self._read(event)]
        self.relayed.extend(out)
        return out

    def _read(self, event: bytes) -> bool:
        """Whether the agent gets this event."""
        lines = event.splitlines()
        data = b"".join(line[5:].strip() for line in lines if line.startswith(b"data:"))
        if not data or data == b"[DONE]":
            return True
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            return True
        self.said_bytes += _said(chunk, "delta")
        reported = _reported(chunk)
        if reported is None:
            return True
        self.reported = reported
        return self.wants_usage or bool(chunk.get("choices"))

    def answer(self, billing: Billing) -> Answer:
        return Answer(200, b"".join(self.relayed), billing, self.reported, self.said_bytes)


class Flight:
    """One request on the gateway's loop: waited for by a handler thread, cancelled by
    the rep's end. `wait` returns once the task (and its connection) is done."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        work: Coroutine[Any, Any, Answer],
        emit: Emit | None,
    ) -> None:
        self._loop = loop
        self._done: concurrent.futures.Future[Answer] = concurrent.futures.Future()
        self._task: asyncio.Task[Answer] | None = None
        self._emit = emit
        loop.call_soon_threadsafe(self._start, work)

    def _start(self, work: Coroutine[Any, Any, Answer]) -> None:
        self._task = self._loop.create_task(work)
        self._task.add_done_callback(self._finish)

    def _finish(self, task: asyncio.Task[Answer]) -> None:
        if task.cancelled():
            self._done.set_result(_failed(CANCELLED, "the rep ended", Billing.UNKNOWN))
        elif (exc := task.exception()) is not None:
            self._done.set_exception(exc)
        else:
            self._done.set_result(task.result())
        if self._emit is not None:
            self._emit(None)

    def cancel(self) -> None:
        self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def wait(self) -> Answer:
        return self._done.result()


class Gateway:
    def __init__(self, upstream: Upstream) -> None:
        import httpx  # here, not at the top: every command imports this module, few serve a model

        self.config = upstream.config
        timeout = self.config.timeout_s
        headers = {"Authorization": f"Bearer {upstream.key}"} if upstream.key else {}
        self._client = httpx.AsyncClient(
            base_url=self.config.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            follow_redirects=False,  # a redirect could carry the key to another host
        )
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="assay-gateway", daemon=True).start()

    def send(self, body: bytes, stream: StreamReader | None, emit: Emit | None) -> Flight:
        """Start a chat request; a stream's events go to `emit` as they come."""
        return Flight(self._loop, self._exchange(body, stream, emit or (lambda _: None)), emit)

    async def _exchange(self, body: bytes, stream: StreamReader | None, emit: Emit) -> Answer:
        """The whole exchange, retries included, is held to the timeout, so a server
        dripping bytes cannot keep a rep waiting."""
        timeout_s = self.config.timeout_s
        give_up_at = self._loop.time() + timeout_s
        backoff_s = _FIRST_BACKOFF_S
        try:
            async with asyncio.timeout(timeout_s):
                for retry in range(_RETRIES + 1):
                    try:
                        return await self._attempt(body, stream, emit)
                    except _Transient as exc:
                        failure = str(exc)
                        wait_s = max(exc.retry_after_s, backoff_s)
                        if retry == _RETRIES or self._loop.time() + wait_s >= give_up_at:
                            break
                        await asyncio.sleep(wait_s)
                        backoff_s = min(2 * backoff_s, _MAX_BACKOFF_S)
                return _failed(502, f"{failure} ({retry + 1} attempts)", Billing.NONE)
        except TimeoutError:
            if stream is not None and stream.relayed:
                return stream.answer(Billing.UNKNOWN)
            return _failed(504, "upstream did not answer in time", Billing.UNKNOWN)

    async def _attempt(self, body: bytes, stream: StreamReader | None, emit: Emit) -> Answer:
        import httpx

        try:
            async with self._client.stream(
                "POST", "/chat/completions", content=body, headers=_JSON
            ) as response:
                status = response.status_code
                if status in _TRANSIENT_STATUS:
                    raise _Transient(f"upstream answered HTTP {status}", _retry_after(response))
                if status != 200:
                    return _failed(502, f"upstream answered HTTP {status}", Billing.NONE)
                if stream is None:
                    return await _collect(response)
                return await _relay(response, stream, emit)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.WriteError) as e:
            raise _Transient(f"upstream unreachable ({type(e).__name__})") from None
        except httpx.TimeoutException:
            return _failed(504, "upstream did not answer in time", Billing.UNKNOWN)
        except httpx.HTTPError as exc:
            if stream is not None and stream.relayed:
                return stream.answer(Billing.UNKNOWN)
            failure = f"upstream failed mid-answer ({type(exc).__name__})"
            return _failed(502, failure, Billing.UNKNOWN)


def _retry_after(response: Any) -> float:
    try:
        return min(float(response.headers.get("Retry-After", "0")), _MAX_BACKOFF_S)
    except ValueError:
        return 0.0


async def _collect(response: Any) -> Answer:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:  # billed all the same: the upstream made it
            return _failed(502, "upstream answer exceeds the size cap", Billing.UNKNOWN)
        chunks.append(chunk)
    data = b"".join(chunks)
    try:
        answer = json.loads(data)
    except (ValueError, RecursionError):
        return _failed(502, "upstream answer is not JSON", Billing.UNKNOWN)
    return Answer(200, data, Billing.USAGE, _reported(answer), _said(answer, "message"))


async def _relay(response: Any, stream: StreamReader, emit: Emit) -> Answer:
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:  # the stream is cut here, and billed whole
            return stream.answer(Billing.UNKNOWN)
        for event in stream.feed(chunk):
            emit(event)
    return stream.answer(Billing.USAGE)
