"""The intake's door against a real `assay validator serve` on 127.0.0.1: what it
refuses before reading a body, what it answers to any body, and an honest miner's
submission answered through floods of idle connections and stalled bodies.

The floods hold about 1,300 sockets in this process and as many in the validator: the
file limit is raised to cover them (the validator raises its own to its hard limit).
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from pathlib import Path

from bittensor.wallets import regen_hotkey
from bittensor_core import Keypair

from assay.mechanism.spec import Track
from assay.schema.mechanism_file import pinned
from assay.validator.http_intake import body_cap
from inprocess_cli import run_cli
from intake_floods import (
    AGENT,
    FLOODERS,
    HONEST,
    IDLE_CONNECTIONS,
    STALLED_BODIES,
    VALIDATOR,
    answer_of,
    close_all,
    honest_submit,
    idle_connections,
    raise_file_limit,
    request_head,
    rss_bytes,
    served,
    signed_headers,
    stalled_bodies,
    write_subnet,
)

STRANGER = Keypair.create_from_uri("//Stranger")
CAP = body_cap(pinned().sandbox.agent_code_bytes)


def headers_alone(
    port: int, key: Keypair, declared: int, nonce: bytes | None = None
) -> tuple[int, dict[str, object]]:
    """A signed request's headers (its nonce's bytes replaced by `nonce`), declaring a
    body that is never sent; its answer."""
    headers = signed_headers(key, b"") | {"Content-Length": str(declared)}
    head = request_head(headers)
    if nonce is not None:
        head = head.replace(headers["X-Bittensor-Nonce"].encode(), nonce)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        return answer_of(sock)


def posted(port: int, key: Keypair, body: bytes) -> tuple[int, dict[str, object]]:
    headers = signed_headers(key, body) | {"Content-Length": str(len(body))}
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request_head(headers) + body)
        return answer_of(sock)


def test_the_door_refuses_from_the_headers_and_any_body_gets_a_json_refusal(
    tmp_path: Path,
) -> None:
    write_subnet(tmp_path, (HONEST,))
    with served(tmp_path) as intake:
        # Answered though the declared body never comes: refused before it is read.
        status, answer = headers_alone(intake.port, STRANGER, 1000)
        assert status == 403 and "not registered" in str(answer["refused"])
        status, answer = headers_alone(intake.port, HONEST, 2 << 20)
        assert status == 413 and str(CAP) in str(answer["refused"])
        future = str(time.time_ns() + 60 * 10**9).encode()
        for nonce in (b"\xb2", b"\xd9\xa1", b"-1", b"1" * 40, future):  # "²", "١" pass isdigit
            status, answer = headers_alone(intake.port, HONEST, 1000, nonce=nonce)
            assert status == 401 and "not authenticated" in str(answer["refused"]), nonce
        bodies = [
            b"[" * 100_000,
            b'{"agent": ' * 30_000,
            b"\xff\xfe{not utf-8}",
            b'{"agent": "\\ud800", "manifest": {}}',
            b'{"agent": 1, "manifest": []}',
            json.dumps({"agent": AGENT, "manifest": {"format": 7}}).encode(),
            b"",
        ]
        for body in bodies:
            status, answer = posted(intake.port, HONEST, body)
            assert 400 <= status < 500 and "not" in str(answer["refused"]), (body[:20], answer)
        assert honest_submit(intake)[0] == 200


def test_a_validator_named_by_its_wallet_takes_what_agent_submit_validator_sends(
    tmp_path: Path,
) -> None:
    wallets = tmp_path / "miner-wallets"
    miner = regen_hotkey(name="miner", hotkey="h1", path=str(wallets), seed="0x" + "22" * 32)
    write_subnet(tmp_path, (miner.hotkey,), wallet=True)
    agent = tmp_path / "mine.py"
    agent.write_text(AGENT)
    with served(tmp_path) as intake:
        sent = run_cli(
            [
                *("agent", "submit", str(agent), "--track", "skills", "--hotkey", "miner/h1"),
                *("--url", intake.url, "--wallet-path", str(wallets)),
                *("--validator", VALIDATOR.ss58_address),
            ]
        )
    assert sent.returncode == 0, sent.stdout
    assert json.loads(sent.stdout)["status"] == 200


def test_the_rate_limit_holds_across_a_restart(tmp_path: Path) -> None:
    write_subnet(tmp_path, (HONEST,))
    with served(tmp_path) as intake:
        assert honest_submit(intake)[0] == 200
    # Emptied, so the restart starts no round and the limit cannot come from the files.
    shutil.rmtree(tmp_path / "drop")
    (tmp_path / "drop").mkdir()
    with served(tmp_path) as intake:
        status, answer = honest_submit(intake, code=AGENT.replace("ALLOW", "WARN"))
        assert status == 429 and "retry in" in str(answer["refused"])
        assert honest_submit(intake, track=Track.PACKAGES)[0] == 200


def test_an_honest_submit_is_answered_through_idle_connections_and_stalled_bodies(
    tmp_path: Path,
) -> None:
    raise_file_limit(2 * (IDLE_CONNECTIONS + STALLED_BODIES) + 256)
    write_subnet(tmp_path, (HONEST, *FLOODERS))
    with served(tmp_path) as intake:
        # Warmed up by a first submission, so the growth is the floods' alone.
        assert honest_submit(intake, track=Track.PACKAGES)[0] == 200
        quiet = rss_bytes(intake.process.pid)
        idle = idle_connections(intake.port)
        stalled = stalled_bodies(intake.port)
        try:
            # The client's timeout is 5 s: no answer by then fails the test.
            status, answer = honest_submit(intake)
            grown = rss_bytes(intake.process.pid) - quiet
        finally:
            close_all(idle, stalled)
    assert status == 200, answer
    assert grown < 64 << 20, f"the validator grew by {grown >> 20} MiB"
