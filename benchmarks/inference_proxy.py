"""Inference proxy overhead: a chat request through assay's proxy against the same request direct.

Upstream: an OpenAI-compatible server on loopback answering at once with a
canned completion, so the timing is all transport. Direct: the agent's plain
urllib client posts to that upstream. Proxied: the same client posts to the
shim's relay on 127.0.0.1 (the code that runs inside every sandbox), which
carries it over the rep's Unix socket to the validator's proxy (nonce check,
budget, model rewrite, metering, digests), which forwards it upstream with the
key through its pooled client. Pairs are interleaved so drift hits both sides.

Then the meter against two floods (issue 22), the upstream in a process of its
own that bills every request as a provider generating to the limit would
(prompt bytes plus `max_tokens` × `n`) and stalls until the client leaves:

- n-flood: two reps (budget 400,000 tokens each) each send 4 concurrent
  requests with `n: 128, max_tokens: 4096` and 4 with `max_tokens: 10**6`, and
  return at once. Printed: tokens the upstream billed, tokens the reps
  recorded, and the budget.
- rejected-body flood: an attacker process sends ~1 MiB JSON-array bodies
  from 4 connections at once for FLOOD_S seconds; the control sends small
  well-formed requests the same way for the same time. Both exhaust the rep's
  200-request budget. Printed: this process's CPU (the proxy's) for each, and
  their ratio (target <= 2).

Last line: ratio=<median proxied / median direct>; the line before gives the
added milliseconds per request.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
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
FLOOD_S = float(os.environ.get("FLOOD_S", "5"))
QUESTION = [{"role": "user", "content": "x"}]
REP_BUDGET = InferenceBudget(requests=200, tokens=400_000, wall_extension_s=0.0)
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


class _Billing(BaseHTTPRequestHandler):
    """A provider generating to the limit: bills prompt bytes + max_tokens x n on receipt,
    then holds the answer until the client leaves (or 30 s). GET answers the total billed."""

    billed = 0
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer(json.dumps({"billed": _Billing.billed}).encode())

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        if body.get("max_tokens", 0) > 10_000:  # stalls: the n-flood's
            with _Billing.lock:
                _Billing.billed += len(raw) + body["max_tokens"] * body.get("n", 1)
            self.connection.settimeout(30)
            with contextlib.suppress(OSError):
                self.connection.recv(1)  # returns when the proxy cancels the request
            return
        self._answer(ANSWER)

    def _answer(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _billing_upstream() -> tuple[str, multiprocessing.Process]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Billing)
    server.daemon_threads = True
    process = multiprocessing.Process(target=server.serve_forever, daemon=True)
    process.start()
    server.server_close()
    return f"http://127.0.0.1:{server.server_address[1]}/v1", process


def _unix_post(address: str, body: bytes) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(address)
        head = f"POST /v1/chat/completions HTTP/1.0\r\nAuthorization: Bearer {NONCE}\r\n"
        try:
            s.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
            return int(s.recv(64).split()[1])
        except (OSError, IndexError, ValueError):
            return 0  # refused before the body was read: the proxy closed the connection


def _session(base: str, tmp: str, name: str) -> tuple[ProxySession, str]:
    upstream = resolve_upstream(InferenceConfig(base_url=base, model="bench-model"))
    session = ProxySession(upstream, nonce=NONCE, model="bench-model", budget=REP_BUDGET)
    os.mkdir(Path(tmp) / name)
    session.listen(Path(tmp) / name / SOCKET_NAME)
    return session, str(Path(tmp) / name / SOCKET_NAME)


def _n_flood(base: str, tmp: str) -> None:
    recorded = 0
    for rep in ("rep-a", "rep-b"):
        session, address = _session(base, tmp, rep)
        asks = [{"n": 128, "max_tokens": 4096}] * 4 + [{"max_tokens": 10**6}] * 4
        for extra in asks:
            body = json.dumps({"model": "m", "messages": QUESTION} | extra)
            post = threading.Thread(target=_unix_post, args=(address, body.encode()), daemon=True)
            post.start()
        time.sleep(0.5)  # the agent returns while they are upstream
        usage = session.close()
        recorded += usage.tokens
        print(f"  {rep}: requests {usage.requests}, rejected {usage.rejected}, "
              f"refused {usage.refused}, recorded {usage.tokens} tokens")  # fmt: skip
    time.sleep(0.5)
    with urllib.request.urlopen(f"{base}/billed", timeout=10) as response:
        billed = json.loads(response.read())["billed"]
    budget = 2 * REP_BUDGET.tokens
    print(f"n-flood: upstream billed {billed} tokens, reps recorded {recorded}, budget {budget}")
    print(f"n-flood: billed<=budget {billed <= budget}, recorded==billed {recorded == billed}")


def _attacker(address: str, body: bytes, until: float) -> None:
    """The flooding agent: 4 connections at once, posting `body` until `until`."""

    def hammer() -> None:
        while time.monotonic() < until:
            _unix_post(address, body)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _proxy_cpu(base: str, tmp: str, name: str, body: bytes) -> float:
    session, address = _session(base, tmp, name)
    started = time.process_time()
    attacker = multiprocessing.Process(
        target=_attacker, args=(address, body, time.monotonic() + FLOOD_S)
    )
    attacker.start()
    attacker.join()
    usage = session.close()
    cpu = time.process_time() - started
    print(f"  {name}: validator CPU {cpu:.3f} s; forwarded {usage.requests}, "
          f"rejected {usage.rejected}, refused {usage.refused}")  # fmt: skip
    return cpu


def _body_flood(base: str, tmp: str) -> None:
    array = b"[" + b"1," * ((1 << 20) // 2 - 1) + b"1]"
    honest = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    control = _proxy_cpu(base, tmp, "control", honest)
    flood = _proxy_cpu(base, tmp, "flood", array)
    print(f"rejected-body flood: validator CPU {flood:.3f} s against control {control:.3f} s, "
          f"flood/control={flood / control:.2f}")  # fmt: skip


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
        billing, upstream_process = _billing_upstream()
        _n_flood(billing, tmp)
        _body_flood(billing, tmp)
        upstream_process.terminate()
    server.shutdown()
    assert usage.requests == PAIRS + 20 and usage.errors == 0, usage.summary()
    d, p = statistics.median(direct), statistics.median(proxied)
    print(f"requests: {PAIRS} pairs, interleaved; metered {usage.requests}, tokens {usage.tokens}")
    print(f"direct median {d * 1e3:.3f} ms, proxied median {p * 1e3:.3f} ms")
    print(f"added per request: {(p - d) * 1e3:.3f} ms")
    print(f"ratio={p / d:.2f}")


if __name__ == "__main__":
    sys.exit(main())
