"""A real `assay validator serve` with its intake on 127.0.0.1, and the floods a hostile
miner sends it: idle and half-sent connections, stalled bodies. Shared by the intake's
door tests and `benchmarks/intake_flood.py`; every loop is bounded."""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bittensor import http_auth
from bittensor.wallets import regen_hotkey
from bittensor_core import Keypair

from assay.attest.manifest import pin
from assay.chain.snapshot import write_snapshot
from assay.mechanism.spec import Track
from assay.records.chain import MetagraphSnapshot, Neuron
from assay.schema.manifest import AgentManifest
from assay.validator.http_intake import SUBMIT_PATH, submit
from assay.validator.serve import read_status

VALIDATOR_SEED = "11" * 32
VALIDATOR = Keypair.create_from_seed(bytes.fromhex(VALIDATOR_SEED))
HONEST = Keypair.create_from_uri("//Honest")
AGENT = "def agent_main(context):\n    return {'verdict': 'ALLOW', 'findings': []}\n"
IDLE_CONNECTIONS = 1100
STALLED_BODIES = 150
# Registered hotkeys of the flooder, one per stalled body: the worst case for the door,
# since each passes the checks an unregistered hotkey fails.
FLOODERS = tuple(Keypair.create_from_uri(f"//Flooder{i}") for i in range(STALLED_BODIES))
_PAGE = 4096


@dataclass(frozen=True)
class Served:
    process: subprocess.Popen[str]
    port: int
    root: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def raise_file_limit(needed: int) -> None:
    """This process's soft file limit raised to `needed` (at most the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))


def write_subnet(root: Path, registered: tuple[Keypair, ...], *, wallet: bool = False) -> None:
    """The snapshot, the drop folder and round.toml of a validator whose `[chain]` names
    its hotkey by address, or with `wallet` by wallet and hotkey name (a real wallet)."""
    hotkeys = (VALIDATOR, *registered)
    neurons = [Neuron(uid=u, hotkey=k.ss58_address, stake=1.0) for u, k in enumerate(hotkeys)]
    neurons[0] = Neuron(uid=0, hotkey=VALIDATOR.ss58_address, stake=1000.0, validator_permit=True)
    write_snapshot(
        MetagraphSnapshot(netuid=7, block=100, neurons=tuple(neurons)), root / "subnet.json"
    )
    (root / "drop").mkdir(exist_ok=True)
    chain = f'hotkey = "{VALIDATOR.ss58_address}"\n'
    if wallet:
        path = str(root / "wallets")
        regen_hotkey(name="validator", hotkey="default", path=path, seed="0x" + VALIDATOR_SEED)
        chain = 'wallet = "validator"\nhotkey = "default"\nwallet_path = "wallets"\n'
    (root / "round.toml").write_text(
        '[round]\ntracks = ["skills"]\nseed = "5eed"\ndb = "rounds.db"\n'
        'secret_file = "validator.secret"\njobs = 1\n\n'
        f'[chain]\nsnapshot = "subnet.json"\n{chain}'
    )


# A service manager's default soft file limit (systemd's, a login shell's).
DEFAULT_SOFT_FILES = 1024


def _default_file_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(DEFAULT_SOFT_FILES, hard), hard))


@contextlib.contextmanager
def served(root: Path) -> Iterator[Served]:
    """`assay validator serve` on `root` (written by `write_subnet`) with an intake, once
    its first cycle has read the subnet; stopped with SIGTERM. It starts with the usual
    default soft file limit, as under a unit that sets no `LimitNOFILE`."""
    port = free_port()
    status = root / "status.json"
    status.unlink(missing_ok=True)
    command = [
        *(sys.executable, "-m", "assay", "validator", "serve", "--config", "round.toml"),
        *("--drop", "drop", "--status", "status.json", "--intake-port", str(port)),
        *("--interval", "600"),
    ]
    log = root / "serve.log"  # a file, not a pipe: a flood's warnings never block serve
    with log.open("w") as output:
        process = subprocess.Popen(
            command,
            cwd=root,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_default_file_limit,  # only resource calls between fork and exec
        )
    try:
        for _ in range(600):
            if process.poll() is not None:
                raise RuntimeError(f"serve exited: {log.read_text()}")
            if status.exists() and read_status(status).phase == "idle" and _listening(port):
                break
            time.sleep(0.2)
        else:
            raise RuntimeError("serve never reached its first idle phase")
        yield Served(process, port, root)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks


def pinned(work: Path, key: Keypair, code: str, track: Track) -> AgentManifest:
    """`code` pinned by `key` for `track`, the files in `work`."""
    work.mkdir(exist_ok=True)
    agent = work / "agent.py"
    agent.write_text(code)
    return pin(
        agent,
        track=track,
        key=key,
        entrypoint="agent_main",
        sandbox_digest="sha256:test",
        manifest_path=work / "agent.manifest.json",
    )


def honest_submit(
    intake: Served, key: Keypair = HONEST, track: Track = Track.SKILLS, code: str = AGENT
) -> tuple[int, dict[str, object]]:
    """What `assay agent submit --validator` sends, answered within 5 s or a timeout."""
    manifest = pinned(intake.root / f"miner-{key.ss58_address[:8]}-{track.value}", key, code, track)
    return submit(
        intake.url,
        code.encode(),
        manifest,
        key,
        validator_hotkey=VALIDATOR.ss58_address,
        timeout_s=5.0,
    )


def signed_headers(key: Keypair, body: bytes) -> dict[str, str]:
    return http_auth.sign(
        key, method="POST", path=SUBMIT_PATH, body=body, receiver_ss58=VALIDATOR.ss58_address
    )


def request_head(headers: dict[str, str]) -> bytes:
    lines = [
        f"POST {SUBMIT_PATH} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def answer_of(sock: socket.socket) -> tuple[int, dict[str, object]]:
    """The status and JSON body of the one answer on `sock` (read to the close)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def idle_connections(port: int, count: int = IDLE_CONNECTIONS) -> list[socket.socket]:
    """Half send nothing, half the start of a request and never its end."""
    opened = []
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2:
            sock.sendall(f"POST {SUBMIT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
        opened.append(sock)
    return opened


def stalled_bodies(port: int, keys: tuple[Keypair, ...] = FLOODERS) -> list[socket.socket]:
    """One 2 MiB body per registered hotkey, signed headers, then a stall after what the
    kernel takes at once: a third declare 2 MiB, a third are chunked with no length, a
    third declare a length within the cap and send half of it."""
    opened = []
    for i, key in enumerate(keys):
        size = (2 << 20, 2 << 20, 300 << 10)[i % 3]
        body = b"x" * size
        headers = signed_headers(key, body) | {"Content-Type": "application/json"}
        if i % 3 == 1:
            headers["Transfer-Encoding"] = "chunked"
            sent = f"{size:x}\r\n".encode() + body
        else:
            headers["Content-Length"] = str(size)
            sent = body[: size // 2] if i % 3 == 2 else body
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(request_head(headers))
        sock.setblocking(False)
        with contextlib.suppress(OSError):  # the kernel's buffers full, or refused at once
            sock.send(sent)
        opened.append(sock)
    return opened


def still_open(sockets: list[socket.socket]) -> int:
    """How many of `sockets` the intake has not closed (nor answered)."""
    alive = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            sock.recv(_PAGE, socket.MSG_PEEK)  # an answer, or the close
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


def close_all(*groups: list[socket.socket]) -> None:
    for group in groups:
        for sock in group:
            sock.close()
