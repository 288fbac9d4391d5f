"""Inference proxy overhead: a chat request through assay's proxy against the same request direct.

Upstream: an OpenAI-compatible server on loopback answering at once with a
canned completion, so the timing is all transport. Direct: the agent's plain
urllib client posts to that upstream. Proxied: the same client posts to the
shim's relay on 127.0.0.1 (the code that runs inside every sandbox), which
carries it over the rep's Unix socket to the validator's proxy (nonce check,
budget, model rewrite, metering, digests), which forwards it upstream with the
key through its pooled client. Pairs are interleaved so drift hits both sides.

Last line: ratio=<median proxied / median direct>; the line before gives the
added milliseconds per request.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import util
from pathlib import Path
from typing import Any

from assay.inference.config import resolve_upstream
from assay.inference.proxy import HANDLERS_PER_REP, SOCKET_NAME, ProxySession
from assay.mechanism.spec import InferenceBudget
from assay.schema.inference import InferenceConfig

PAIRS = int(os.environ.get("PAIRS", "300"))
NONCE = "ab" * 32
ANSWER = json.dumps(
    {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "BLOCK: reads keys"}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45},
    }
).encode()
BODY = json.dumps(
    {"model": "m", "messages": [{"role": "user", "content": "is this skill malicious? " * 20}]}
).encode()


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a hosted provider speaks it
    disable_nagle_algorithm = True  # as servers built for it do (headers and body are two writes)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)


def _shim() -> Any:
    """The shim module, loaded from its file as the sandbox runs it."""
    spec = util.spec_from_file_location(
        "assay_shim", Path(__file__).parents[1] / "src/assay/runner/shim.py"
    )
    assert spec is not None and spec.loader is not None
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str) -> float:
    request = urllib.request.Request(
        url,
        data=BODY,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {NONCE}"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()
    return time.perf_counter() - started


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    upstream = resolve_upstream(InferenceConfig(base_url=base, model="bench-model"))
    budget = InferenceBudget(requests=10 * PAIRS, tokens=10**9, wall_extension_s=0.0)
    session = ProxySession(upstream, nonce=NONCE, model="bench-model", budget=budget)
    with tempfile.TemporaryDirectory() as tmp:
        session.listen(Path(tmp) / SOCKET_NAME)
        port = _free_port()
        _shim()._start_forwarder(str(Path(tmp) / SOCKET_NAME), port, 2 * HANDLERS_PER_REP)
        direct_url = f"{base}/chat/completions"
        proxied_url = f"http://127.0.0.1:{port}/v1/chat/completions"
        for _ in range(20):  # warm both paths (connection pools, imports)
            _post(direct_url), _post(proxied_url)
        direct, proxied = [], []
        for _ in range(PAIRS):
            direct.append(_post(direct_url))
            proxied.append(_post(proxied_url))
        usage = session.close()
    server.shutdown()
    assert usage.requests == PAIRS + 20 and usage.errors == 0, usage.summary()
    d, p = statistics.median(direct), statistics.median(proxied)
    print(f"requests: {PAIRS} pairs, interleaved; metered {usage.requests}, tokens {usage.tokens}")
    print(f"direct median {d * 1e3:.3f} ms, proxied median {p * 1e3:.3f} ms")
    print(f"added per request: {(p - d) * 1e3:.3f} ms")
    print(f"ratio={p / d:.2f}")


if __name__ == "__main__":
    sys.exit(main())
