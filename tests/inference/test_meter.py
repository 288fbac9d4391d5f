"""The meter against the attacks of issue 22, driven through a rep's real proxy socket.

The test plays the agent (an HTTP client on the rep's Unix socket, as the shim's
relay is) and a loopback server plays the provider; the proxy, its meter and
its gateway are the real ones.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fake_upstream import COMPLETION_TOKENS, KEY, PROMPT_TOKENS, FakeUpstream
from inference_fixtures import upstream_config

from assay.inference.config import Upstream
from assay.inference.proxy import SOCKET_NAME, ProxySession
from assay.mechanism.spec import InferenceBudget

NONCE = "cd" * 32
QUESTION = [{"role": "user", "content": "is this skill malicious?"}]
MiB = 1 << 20


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=20)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


class Rep:
    """One rep's proxy session, and an agent's view of its door."""

    def __init__(self, session: ProxySession, directory: int) -> None:
        self.session = session
        # Through the directory's descriptor: pytest's paths can pass a socket address's length.
        self.address = f"/proc/self/fd/{directory}/{SOCKET_NAME}"

    def post(self, body: dict[str, Any] | bytes) -> tuple[int, bytes]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        connection = _UnixConnection(self.address)
        headers = {"Authorization": f"Bearer {NONCE}", "Content-Type": "application/json"}
        try:
            try:
                connection.request("POST", "/v1/chat/completions", body=data, headers=headers)
                response = connection.getresponse()
            except (BrokenPipeError, ConnectionResetError):
                # A proxy that refuses from the headers may answer and close before the
                # body is sent: its answer is still there to read.
                assert connection.sock is not None
                response = http.client.HTTPResponse(connection.sock)
                response.begin()
            return response.status, response.read()
        finally:
            connection.close()

    def ask(self, **fields: Any) -> tuple[int, Any]:
        status, data = self.post({"model": "any", "messages": QUESTION, **fields})
        return status, json.loads(data) if not fields.get("stream") or status != 200 else data

    def head_only(self, length: int, first: bytes = b"") -> int:
        """Send the headers of a `length`-byte body and only its `first` bytes; the status
        the proxy answers with (it must answer without the rest)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
            raw.settimeout(5)  # under the proxy's 10 s wait for a body that never comes
            raw.connect(self.address)
            raw.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {NONCE}\r\nContent-Length: {length}\r\n\r\n".encode()
                + first
            )
            return int(raw.recv(64).split()[1])


OpenRep = Callable[..., Rep]


@pytest.fixture
def open_rep(tmp_path: Path, upstream: FakeUpstream) -> Iterator[OpenRep]:
    sessions: list[ProxySession] = []
    directory = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)

    def open_(requests: int = 20, tokens: int = 400_000, timeout_s: float = 30.0) -> Rep:
        upstream_ = Upstream(upstream_config(upstream, timeout_s=timeout_s), KEY)
        budget = InferenceBudget(requests=requests, tokens=tokens, wall_extension_s=60.0)
        session = ProxySession(upstream_, nonce=NONCE, model="test-model", budget=budget)
        session.listen(tmp_path / SOCKET_NAME)
        sessions.append(session)
        return Rep(session, directory)

    yield open_
    for session in sessions:
        session.close()
    os.close(directory)


def _wait_for(condition: Callable[[], bool], backstop_s: float = 10.0) -> None:
    """Poll for something the proxy causes asynchronously (the backstop only ends a hang)."""
    deadline = time.monotonic() + backstop_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


# Item 2 of the issue: fields the contract does not name -------------------------------


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"models": ["some/other-model"]}, "`models`"),
        ({"provider": {"order": ["elsewhere"]}}, "`provider`"),
        ({"n_predict": 1_000_000}, "`n_predict`"),
        ({"n": 128, "max_tokens": 4096}, "n must be 1"),
        ({"max_tokens": 4096.0}, "`$.max_tokens`"),
        ({"max_tokens": True}, "`$.max_tokens`"),
        ({"max_completion_tokens": "4096"}, "`$.max_completion_tokens`"),
        ({"seed": 10**30}, "`$.seed`"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "image_url"),
        ({"messages": [{"role": "user", "content": "hi", "n_predict": 9}]}, "`n_predict`"),
    ],
)
def test_fields_outside_the_contract_are_refused_naming_them(
    open_rep: OpenRep, upstream: FakeUpstream, extra: dict[str, Any], named: str
) -> None:
    rep = open_rep()
    status, answer = rep.ask(**extra)
    assert status == 400
    assert named in answer["error"]["message"]
    assert upstream.seen == []
    usage = rep.session.close()
    assert (usage.requests, usage.rejected, usage.tokens) == (0, 1, 0)


def test_a_huge_reply_cap_is_capped_to_the_budget(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    rep = open_rep(tokens=5000)
    status, _ = rep.ask(max_tokens=10**40, temperature=0, seed=7, stop=["\n\n"])
    assert status == 200
    (seen,) = upstream.seen
    assert seen.body["max_tokens"] + len(seen.raw) <= 5000
    assert set(seen.body) == {"model", "messages", "max_tokens", "temperature", "seed", "stop"}


def test_reported_usage_is_clamped_to_what_the_request_could_cost(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    upstream.mode = "huge_usage"
    rep = open_rep(tokens=5000)
    status, _ = rep.ask(max_tokens=100)
    assert status == 200
    usage = rep.session.close()
    (seen,) = upstream.seen
    assert (usage.prompt_tokens, usage.completion_tokens) == (len(seen.raw), 100)
    assert not usage.estimated


# Item 1 of the issue: concurrent requests, a rep that returns at once, oversize answers --


def test_concurrent_requests_share_one_budget(open_rep: OpenRep, upstream: FakeUpstream) -> None:
    upstream.mode, upstream.stall_s = "bill_max", 0.3  # every request costs its whole cap
    rep = open_rep(tokens=10_000)
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda _: rep.ask(max_tokens=4096)[0], range(4)))
    usage = rep.session.close()
    # Two fit at once; the others waited for them to settle, then one got the rest of the
    # budget as its cap and the last found none left.
    assert sorted(statuses) == [200, 200, 200, 429]
    assert upstream.most_in_flight == 2
    assert upstream.billed == usage.tokens <= 10_000
    assert sorted(s.body["max_tokens"] for s in upstream.seen)[0] < 4096


def test_a_reps_end_cancels_its_requests_still_upstream_and_bills_them(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    upstream.mode, upstream.stall_s = "bill_max", 60.0
    rep = open_rep()
    with ThreadPoolExecutor(3) as pool:
        asked = [pool.submit(rep.ask, max_tokens=4096) for _ in range(3)]
        _wait_for(lambda: len(upstream.seen) == 3)
        usage = rep.session.close()  # the rep ended: its agent is gone
        for request in asked:
            request.exception()  # the agent's connections end with the rep
    assert usage.requests == 3
    assert usage.tokens == upstream.billed  # what the provider bills is what is recorded
    assert [e.status for e in usage.exchanges] == [499] * 3 and usage.estimated
    _wait_for(lambda: upstream.abandoned == 3)  # nothing is left upstream for the next rep


def test_an_oversize_answer_is_billed_not_recorded_as_nothing(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    upstream.mode = "oversize"
    rep = open_rep()
    status, answer = rep.ask(max_tokens=300)
    assert status == 502 and "size cap" in answer["error"]["message"]
    usage = rep.session.close()
    (seen,) = upstream.seen
    assert (usage.prompt_tokens, usage.completion_tokens) == (len(seen.raw), 300)
    assert usage.estimated and usage.errors == 1


# Item 3 of the issue: rejected requests cost the agent, and are refused unread -----------


def test_rejected_bodies_spend_the_request_budget_and_are_refused_unread(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    rep = open_rep(requests=3)
    # A 1 MiB JSON array: refused from its first byte, the rest never read.
    assert [rep.head_only(MiB, b"[" + b"1," * 20) for _ in range(2)] == [400, 400]
    assert rep.post(b"  [1, 2, 3]")[0] == 400
    # The budget is spent: refused from the headers alone.
    assert rep.head_only(MiB) == 429
    assert rep.ask()[0] == 429
    usage = rep.session.close()
    assert (usage.requests, usage.rejected, usage.refused) == (0, 3, 2)
    assert upstream.seen == []


def test_a_body_over_the_size_cap_is_refused_from_its_length(open_rep: OpenRep) -> None:
    rep = open_rep()
    assert rep.head_only(64 * MiB) == 413
    assert rep.session.close().rejected == 1


def test_transient_upstream_faults_are_retried_and_counted_once(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    upstream.failures = 2  # two 503s, then an answer
    rep = open_rep()
    status, answer = rep.ask()
    assert status == 200 and answer["choices"][0]["message"]["content"] == upstream.reply
    usage = rep.session.close()
    assert len(upstream.seen) == 3
    assert (usage.requests, usage.errors, usage.tokens) == (1, 0, PROMPT_TOKENS + COMPLETION_TOKENS)


# Streaming ------------------------------------------------------------------------------


def _events(stream: bytes) -> list[Any]:
    data = [e.removeprefix(b"data: ") for e in stream.split(b"\n\n") if e]
    return [json.loads(d) for d in data if d != b"[DONE]"]


def test_a_stream_is_relayed_and_metered_by_its_usage_chunk(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    rep = open_rep()
    status, stream = rep.ask(stream=True, stream_options={"include_usage": True})
    assert status == 200
    events = _events(stream)
    said = "".join(e["choices"][0]["delta"]["content"] for e in events if e["choices"])
    assert said.strip() == upstream.reply
    assert events[-1]["usage"]["completion_tokens"] == COMPLETION_TOKENS
    status, stream = rep.ask(stream=True)  # the usage chunk is the proxy's, not shown
    assert status == 200 and all(e["choices"] for e in _events(stream))
    usage = rep.session.close()
    assert all(s.body["stream_options"] == {"include_usage": True} for s in upstream.seen)
    assert usage.tokens == 2 * (PROMPT_TOKENS + COMPLETION_TOKENS) and not usage.estimated
    assert [e.status for e in usage.exchanges] == [200, 200]


def test_a_stream_without_usage_is_counted(open_rep: OpenRep, upstream: FakeUpstream) -> None:
    upstream.mode = "no_usage"
    rep = open_rep()
    status, _ = rep.ask(stream=True, stream_options={"include_usage": True})
    assert status == 200
    usage = rep.session.close()
    assert usage.estimated
    assert usage.completion_tokens == -(-len((upstream.reply + " ").encode()) // 4)


def test_requests_after_the_reps_end_are_not_served(
    open_rep: OpenRep, upstream: FakeUpstream
) -> None:
    rep = open_rep()
    usage = rep.session.close()
    with pytest.raises(OSError):
        rep.ask()
    assert usage.requests == 0 and upstream.seen == []
