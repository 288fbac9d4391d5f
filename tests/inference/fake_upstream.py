"""A real OpenAI-compatible HTTP server on loopback: the upstream the tests point assay at.

It stands in for a hosted provider (or llama.cpp's `llama-server`): it answers
`POST /v1/chat/completions` with a canned completion and its `usage`, records
every request (headers and body) it saw, and can be told to stall, fail or
leave `usage` out.
"""

from __future__ import annotations

import json
import threading
import time
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


@dataclass
class FakeUpstream:
    port: int = 0
    mode: str = "ok"  # ok | no_usage | stall | fail
    stall_s: float = 30.0
    reply: str = "BLOCK: the skill reads ~/.ssh/id_rsa"
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        if self.mode == "fail":
            return 500, json.dumps({"error": f"bad key {KEY[:12]}..."}).encode()
        if self.mode == "stall":
            time.sleep(self.stall_s)
        completion: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply}}],
        }
        if self.mode != "no_usage":
            completion["usage"] = {
                "prompt_tokens": PROMPT_TOKENS,
                "completion_tokens": COMPLETION_TOKENS,
                "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
            }
        return 200, json.dumps(completion).encode()


def _handler(upstream: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with upstream.lock:
                upstream.seen.append(
                    Seen(self.path, self.headers.get("Authorization"), dict(self.headers), body)
                )
            status, data = upstream.answer(body)
            try:
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
