"""A real OpenAI-compatible HTTP server on loopback: the upstream the tests point assay at.

It stands in for a hosted provider (or llama.cpp's `llama-server`): it answers
`POST /v1/chat/completions` with a canned completion and its `usage` (streamed
as server-sent events when asked), records every request (headers and body) it
saw and what it billed, and can be told to stall, fail, fail a few times, leave
`usage` out, report absurd usage, answer past the proxy's size cap, or bill
every request its whole reply cap as a provider generating to the limit would.
"""

from __future__ import annotations

import json
import select
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-test-upstream-key-7f3a9c1e5d2b4a6f"
PROMPT_TOKENS = 11
COMPLETION_TOKENS = 7


@dataclass
class Seen:
    path: str
    authorization: str | None
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes


@dataclass
class FakeUpstream:
    port: int = 0
    mode: str = "ok"  # ok | no_usage | stall | fail | huge_usage | oversize | bill_max
    stall_s: float = 30.0
    failures: int = 0  # answer this many requests 503 first (a transient fault)
    reply: str = "BLOCK: the skill reads ~/.ssh/id_rsa"
    seen: list[Seen] = field(default_factory=list)
    billed: int = 0  # tokens this upstream billed (prompt + completion of what it served)
    in_flight: int = 0
    most_in_flight: int = 0
    abandoned: int = 0  # requests whose client went away before the answer
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def usage(self, seen: Seen) -> dict[str, int]:
        """What this request is billed: the worst case a request can cost in `bill_max`."""
        prompt, completion = PROMPT_TOKENS, COMPLETION_TOKENS
        if self.mode == "bill_max":
            prompt, completion = len(seen.raw), seen.body.get("max_tokens") or 0
        if self.mode == "huge_usage":
            prompt, completion = 10**30, 10**30
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def fails_now(self) -> bool:
        with self.lock:
            self.failures -= 1
            return self.failures >= 0 or self.mode == "fail"

    def answer(self, seen: Seen, failing: bool) -> tuple[int, bytes]:
        if failing:
            status = 500 if self.mode == "fail" else 503
            return status, json.dumps({"error": f"bad key {KEY[:12]}..."}).encode()
        completion: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": seen.body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply}}],
        }
        if self.mode == "oversize":
            completion["choices"][0]["message"]["content"] = "x" * (5 << 20)
        if self.mode != "no_usage":
            completion["usage"] = self.usage(seen)
        return 200, json.dumps(completion).encode()

    def events(self, seen: Seen) -> list[bytes]:
        """The answer as server-sent events: one delta a word, then the usage chunk when asked."""
        words = self.reply.split(" ")
        chunks: list[dict[str, Any]] = [
            {"choices": [{"index": 0, "delta": {"content": w + " "}}]} for w in words
        ]
        wanted = (seen.body.get("stream_options") or {}).get("include_usage")
        if wanted and self.mode != "no_usage":
            chunks.append({"choices": [], "usage": self.usage(seen)})
        return [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks] + [
            b"data: [DONE]\n\n"
        ]

    def stall(self, connection: Any) -> bool:
        """Wait `stall_s`, or until the client goes away (False then)."""
        readable, _, _ = select.select([connection], [], [], self.stall_s)
        if readable and not connection.recv(1, 0x40 | 0x2):  # MSG_DONTWAIT | MSG_PEEK: EOF
            with self.lock:
                self.abandoned += 1
            return False
        return True

    def bill(self, seen: Seen) -> None:
        if self.mode != "no_usage":
            usage = self.usage(seen)
            with self.lock:
                self.billed += usage["prompt_tokens"] + usage["completion_tokens"]


def _handler(upstream: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            seen = Seen(
                self.path,
                self.headers.get("Authorization"),
                dict(self.headers),
                json.loads(raw),
                raw,
            )
            with upstream.lock:
                upstream.seen.append(seen)
                upstream.in_flight += 1
                upstream.most_in_flight = max(upstream.most_in_flight, upstream.in_flight)
            try:
                self.respond(seen)
            finally:
                with upstream.lock:
                    upstream.in_flight -= 1

        def respond(self, seen: Seen) -> None:
            # A provider bills what it generated whether or not the client stays for it.
            failing = upstream.fails_now()
            if not failing:
                upstream.bill(seen)
            if upstream.mode in ("stall", "bill_max") and not upstream.stall(self.connection):
                return
            try:
                if seen.body.get("stream") and not failing:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for event in upstream.events(seen):
                        self.wfile.write(event)
                    return
                status, data = upstream.answer(seen, failing)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the proxy gave up on a stalled answer, as it should

    return Handler


@contextmanager
def serve() -> Iterator[FakeUpstream]:
    upstream = FakeUpstream()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream))
    server.daemon_threads = True
    upstream.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield upstream
    finally:
        server.shutdown()
        server.server_close()
