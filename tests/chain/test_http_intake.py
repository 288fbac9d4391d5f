"""The miners' HTTP intake: signed submissions in, every refusal with a reason.

Requests are signed with the SDK's btauth/1 by real sr25519 hotkeys and sent through
Starlette's in-process test client; manifests are real (`pin`), checked for real, the
subnet a real snapshot file and the rate limit in a real round store.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from bittensor import http_auth
from bittensor.wallets import regen_hotkey
from bittensor_core import Keypair
from starlette.applications import Starlette
from starlette.testclient import TestClient

import intake_floods
from assay.attest.intake import read_submission
from assay.attest.manifest import pin
from assay.chain.snapshot import write_snapshot
from assay.mechanism.spec import Track
from assay.records.chain import MetagraphSnapshot, Neuron
from assay.validator.http_intake import (
    SUBMIT_PATH,
    IntakeLimits,
    body_cap,
    intake_app,
    start_intake,
    submitted_name,
)
from assay.validator.intake_server import ConnectionLimits
from assay.validator.serve import quarantine
from inprocess_cli import run_cli
from intake_floods import AGENT, answer_of, pinned, request_head, signed_headers

# Starlette's in-process client still runs on httpx and says so; it is the client here.
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with")

VALIDATOR = intake_floods.VALIDATOR.ss58_address
MINER = Keypair.create_from_uri("//Miner")
OTHER = Keypair.create_from_uri("//Other")


def body(tmp_path: Path, key: Keypair, code: str = AGENT, track: Track = Track.SKILLS) -> bytes:
    manifest = pinned(tmp_path / "miner", key, code, track)
    return json.dumps({"agent": code, "manifest": manifest.model_dump(mode="json")}).encode()


def post(client: TestClient, data: bytes, signer: Keypair, **sign: object) -> tuple[int, dict]:
    headers = http_auth.sign(
        signer, method="POST", path=SUBMIT_PATH, body=data, receiver_ss58=VALIDATOR, **sign
    )
    response = client.post(SUBMIT_PATH, content=data, headers=headers)
    return response.status_code, response.json()


@pytest.fixture
def drop(tmp_path: Path) -> Path:
    (tmp_path / "drop").mkdir()
    return tmp_path / "drop"


def subnet_file(path: Path, hotkeys: tuple[str, ...]) -> Path:
    neurons = tuple(Neuron(uid=u, hotkey=h, stake=1.0) for u, h in enumerate(hotkeys))
    write_snapshot(MetagraphSnapshot(netuid=7, block=100, neurons=neurons), path)
    return path


def app_of(
    drop: Path,
    *,
    clock: Callable[[], float] = time.time,
    also: tuple[str, ...] = (),
    on_accept: Callable[[str, bytes], None] = lambda _hotkey, _code: None,
    **limits: Any,
) -> Starlette:
    """The intake of a subnet that registers the validator, MINER, OTHER and `also`."""
    registered = (VALIDATOR, MINER.ss58_address, OTHER.ss58_address, *also)
    subnet = subnet_file(drop.parent / "subnet.json", registered)
    return intake_app(
        drop,
        validator_hotkey=VALIDATOR,
        subnet=subnet,
        db=drop.parent / "rounds.db",
        limits=IntakeLimits(**limits),
        clock=clock,
        on_accept=on_accept,
    )


def client(drop: Path, **options: Any) -> TestClient:
    return TestClient(app_of(drop, **options))


def test_a_signed_submission_lands_in_the_drop_folder(tmp_path: Path, drop: Path) -> None:
    arrivals: list[tuple[str, bytes]] = []
    intake = client(drop, on_accept=lambda hotkey, code: arrivals.append((hotkey, code)))
    status, answer = post(intake, body(tmp_path, MINER), MINER)
    assert status == 200, answer
    assert post(intake, body(tmp_path, MINER, AGENT + "# newer\n"), MINER)[0] == 429
    assert arrivals == [(MINER.ss58_address, AGENT.encode())]
    [manifest] = drop.glob("*.manifest.json")
    assert manifest.name == f"{MINER.ss58_address}.skills.manifest.json"
    submission = read_submission(manifest)
    assert submission.problem is None
    assert answer["accepted"] == submission.agent.agent_hash
    assert submission.agent.name == "agent"  # the file it was pinned as, not the hotkey


def test_an_agent_is_named_by_the_file_it_was_pinned_as_and_old_versions_go(
    tmp_path: Path, drop: Path
) -> None:
    intake = client(drop, interval_s=0.0)
    sent = []
    for n, name in enumerate(("first_try", "second", "third")):
        work = tmp_path / name
        work.mkdir()
        code = AGENT + f"# version {n}\n"
        (work / f"{name}.py").write_text(code)
        manifest = pin(
            work / f"{name}.py", track=Track.SKILLS, key=MINER, entrypoint="agent_main",
            sandbox_digest="sha256:test", manifest_path=work / "m.manifest.json",
        )  # fmt: skip
        data = {"agent": code, "manifest": manifest.model_dump(mode="json")}
        assert post(intake, json.dumps(data).encode(), MINER)[0] == 200
        [manifest_path] = drop.glob("*.manifest.json")
        sent.append(read_submission(manifest_path).agent.name)
    assert sent == ["first_try", "second", "third"]
    # The version a cycle may have just read stays until the next one arrives.
    slot = drop / f"{MINER.ss58_address}.skills"
    assert sorted(p.name for p in slot.iterdir()) == ["second.py", "third.py"]


@pytest.mark.parametrize(
    ("pinned_as", "name"),
    [
        ("tools/my_agent.py", "my_agent"),
        ("C:\\agents\\win_agent.py", "win_agent"),
        ("../../etc/passwd", "passwd"),
        ("agent.skills.manifest.json", "agent"),
        ("évil.py", "agent"),
        ("a\x00b.py", "agent"),
        ("x" * 65 + ".py", "agent"),
        ("", "agent"),
        (".hidden.py", "agent"),
    ],
)
def test_a_pinned_name_the_drop_cannot_hold_as_a_file_name_is_agent(
    pinned_as: str, name: str
) -> None:
    assert submitted_name(pinned_as) == name


def test_replays_stale_and_misaddressed_requests_are_refused(tmp_path: Path, drop: Path) -> None:
    intake = client(drop, interval_s=0.0)
    data = body(tmp_path, MINER)
    headers = http_auth.sign(
        MINER, method="POST", path=SUBMIT_PATH, body=data, receiver_ss58=VALIDATOR
    )
    assert intake.post(SUBMIT_PATH, content=data, headers=headers).status_code == 200
    again = intake.post(SUBMIT_PATH, content=data, headers=headers)
    assert again.status_code == 401 and "already accepted" in again.json()["refused"]
    old = time.time_ns() - 10 * 60 * 10**9
    status, answer = post(intake, data, MINER, nonce_ns=old)
    assert status == 401 and "older" in answer["refused"]
    elsewhere = http_auth.sign(
        MINER, method="POST", path=SUBMIT_PATH, body=data, receiver_ss58=OTHER.ss58_address
    )
    wrong = intake.post(SUBMIT_PATH, content=data, headers=elsewhere)
    assert wrong.status_code == 401 and "addressed to" in wrong.json()["refused"]
    tampered = intake.post(SUBMIT_PATH, content=data + b" ", headers=headers)
    assert tampered.status_code == 401


def test_what_is_not_a_valid_submission_of_the_sender_is_refused(
    tmp_path: Path, drop: Path
) -> None:
    intake = client(drop, interval_s=0.0, code_bytes=4096)
    status, answer = post(intake, body(tmp_path, OTHER), MINER)
    assert status == 403 and "not" in answer["refused"]
    status, answer = post(intake, b'{"agent": 1}', MINER)
    assert status == 400 and "not" in answer["refused"]
    forged = json.loads(body(tmp_path, MINER))
    forged["agent"] = AGENT + "import os\n"
    status, answer = post(intake, json.dumps(forged).encode(), MINER)
    assert status == 400 and "code" in answer["refused"]
    cap = body_cap(4096)
    status, answer = post(intake, b"x" * (cap + 1), MINER)
    assert status == 413 and str(cap) in answer["refused"]
    assert list(drop.iterdir()) == []


def test_one_new_version_per_hotkey_and_track_per_interval_and_the_newer_replaces(
    tmp_path: Path, drop: Path
) -> None:
    now = [1000.0]
    intake = client(drop, interval_s=600.0, clock=lambda: now[0])
    assert post(intake, body(tmp_path, MINER), MINER)[0] == 200
    newer = AGENT.replace("ALLOW", "WARN")
    status, answer = post(intake, body(tmp_path, MINER, newer), MINER)
    assert status == 429 and "every 600s; retry in 600s" in answer["refused"]
    # Another track is another slot.
    assert post(intake, body(tmp_path, MINER, newer, Track.PACKAGES), MINER)[0] == 200
    now[0] += 601
    assert post(intake, body(tmp_path, MINER, newer), MINER)[0] == 200
    skills = drop / f"{MINER.ss58_address}.skills" / "agent.py"
    assert skills.read_text() == newer
    assert len(list(drop.glob("*.manifest.json"))) == 2


@contextlib.contextmanager
def listening(app: Starlette, connections: ConnectionLimits | None = None) -> Iterator[int]:
    """`app` served by the intake's server on 127.0.0.1; its port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = start_intake(app, port, connections)
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        yield port
    finally:
        server.should_exit = True


def test_agent_submit_reaches_a_served_intake(tmp_path: Path, drop: Path) -> None:
    """Over a real socket: uvicorn on 127.0.0.1, the miner's side run as a user runs it."""
    wallets = tmp_path / "wallets"
    miner = regen_hotkey(name="miner", hotkey="h1", path=str(wallets), seed="0x" + "22" * 32)
    with listening(app_of(drop, also=(miner.hotkey.ss58_address,))) as port:
        agent = tmp_path / "mine.py"
        agent.write_text(AGENT)
        base = [
            *("agent", "submit", str(agent), "--track", "skills", "--hotkey", "miner/h1"),
            *("--url", f"http://127.0.0.1:{port}", "--wallet-path", str(wallets)),
        ]
        sent = run_cli([*base, "--validator", VALIDATOR])
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout)["status"] == 200
        address = miner.hotkey.ss58_address
        assert (drop / f"{address}.skills" / "mine.py").read_text() == AGENT
        # Addressed to no validator: refused, since it could be replayed to any validator.
        unbound = run_cli(base)
        assert unbound.returncode == 1
        assert "receiver" in json.loads(unbound.stdout)["refused"]


def test_a_connection_that_never_finishes_its_headers_is_closed(drop: Path) -> None:
    with (
        listening(app_of(drop), ConnectionLimits(header_s=1.0)) as port,
        socket.create_connection(("127.0.0.1", port), timeout=30) as half_sent,
    ):
        half_sent.sendall(b"POST /submit HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        # Closed by the intake: recv returns the end, where it would time out if held.
        assert half_sent.recv(1024) == b""


def test_past_the_connection_cap_the_oldest_idle_connection_gives_way(
    tmp_path: Path, drop: Path
) -> None:
    with listening(app_of(drop), ConnectionLimits(max_connections=8, header_s=600)) as port:
        idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(20)]
        try:
            data = body(tmp_path, MINER)
            headers = http_auth.sign(
                MINER, method="POST", path=SUBMIT_PATH, body=data, receiver_ss58=VALIDATOR
            )
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{SUBMIT_PATH}", data=data, headers=headers
            )
            with urllib.request.urlopen(request, timeout=5) as answer:
                assert answer.status == 200
            # The oldest thirteen gave way to the newest seven and the miner.
            assert [sock.recv(1024) for sock in idle[:13]] == [b""] * 13
            for sock in idle[13:]:
                sock.setblocking(False)
                with pytest.raises(BlockingIOError):
                    sock.recv(1024)
        finally:
            for sock in idle:
                sock.close()


def stall(port: int, key: Keypair, declared: int = 10_000) -> socket.socket:
    """Signed headers and the start of a body that never ends."""
    headers = signed_headers(key, b"") | {"Content-Length": str(declared)}
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(request_head(headers) + b"{")
    return sock


def answer(sock: socket.socket) -> tuple[int, str]:
    status, content = answer_of(sock)
    return status, str(content["refused"])


def test_one_body_in_flight_per_hotkey_the_oldest_giving_way_and_each_with_a_deadline(
    drop: Path,
) -> None:
    third = Keypair.create_from_uri("//Third")
    app = app_of(drop, also=(third.ss58_address,), max_bodies=2, body_s=600)
    with listening(app) as port:
        # Headers alone cannot prove a hotkey: a body held open under it gives way.
        held = stall(port, MINER)
        time.sleep(1.0)  # the order of arrival, not a measurement
        newer = stall(port, MINER)
        status, reason = answer(held)
        assert status == 408 and "newer request of its hotkey" in reason
        other = stall(port, OTHER)
        time.sleep(1.0)
        last = stall(port, third)
        status, reason = answer(newer)
        assert status == 408 and "when 2 were in flight" in reason
        for sock in (other, last):
            sock.close()
    with listening(app_of(drop, body_s=1.0)) as port:
        status, reason = answer(stall(port, MINER))
        assert status == 408 and "within 1s" in reason


def test_concurrent_versions_of_one_hotkey_land_once(tmp_path: Path, drop: Path) -> None:
    versions = [body(tmp_path, MINER, AGENT.replace("ALLOW", f"ALLOW{i}")) for i in range(12)]

    def send(data: bytes) -> int:
        headers = http_auth.sign(
            MINER, method="POST", path=SUBMIT_PATH, body=data, receiver_ss58=VALIDATOR
        )
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{SUBMIT_PATH}", data=data, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as refused:
            return refused.code

    with listening(app_of(drop)) as port, ThreadPoolExecutor(len(versions)) as pool:
        statuses = list(pool.map(send, versions))
    assert statuses.count(200) == 1 and set(statuses) <= {200, 408, 429}, statuses
    assert len(list(drop.glob("*.manifest.json"))) == 1


def test_quarantine_takes_an_intake_submission_s_folder_with_its_manifest(
    tmp_path: Path, drop: Path
) -> None:
    intake = client(drop, interval_s=0.0)
    for version in ("# one\n", "# two\n"):
        assert post(intake, body(tmp_path, MINER, AGENT + version), MINER)[0] == 200
        [manifest] = drop.glob("*.manifest.json")
        folder = quarantine(drop, manifest, "unreadable")
        slot = f"{MINER.ss58_address}.skills"
        assert sorted(p.name for p in drop.iterdir()) == ["quarantine"]
        assert (folder / slot / "agent.py").read_text() == AGENT + version
        assert (folder / f"{manifest.name}.reason.txt").read_text() == "unreadable\n"
