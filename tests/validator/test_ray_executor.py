"""The Ray executor on a real local Ray cluster: same results as local, crash-safe.

One cluster (a head started here, two worker processes) serves the module; the
local round every Ray round is compared with is run once.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

# One worker runs the module: its cluster (a head and two workers, on ports of its own)
# is module-scoped, and one Ray cluster at a time is enough load for the host.
pytestmark = [pytest.mark.sandbox, pytest.mark.slow, pytest.mark.xdist_group("ray")]

ROOT = Path(__file__).resolve().parents[2]
# A loopback-only test cluster: no token to distribute (docs/multi-node.md uses tokens).
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
# Sleeping costs no CPU budget and keeps every rep long enough for a kill to land in it.
SLOW_WRAPPER = """

_fast_agent_main = agent_main


def agent_main(context):
    import time

    time.sleep(0.5)
    return _fast_agent_main(context)
"""
REPS_IN_ROUND = 20  # 2 agents x (2 skills tasks x 3 reps + 2 repositories x 2 reps)


@dataclass(frozen=True)
class Setup:
    folder: Path
    corpus: Path
    agents: tuple[Path, ...]
    secret: Path
    env: dict[str, str]
    address: str

    def run_args(self, db: Path, executor: str) -> list[str]:
        args = ["round", "run", "--corpus", str(self.corpus), "--db", str(db), "--seed", "5eed"]
        args += ["--tracks", "skills,repositories", "--secret-file", str(self.secret)]
        for agent in self.agents:
            args += ["--agent", str(agent)]
        args += ["--executor", executor]
        return [*args, "--address", self.address] if executor == "ray" else args

    def assay(self, *args: str) -> dict[str, Any]:
        result = subprocess.run(
            [sys.executable, "-m", "assay", *args, "--json"],
            capture_output=True,
            text=True,
            timeout=240,
            env=self.env,
            cwd=self.folder,
        )
        assert result.returncode == 0, result.stderr + result.stdout
        payload: dict[str, Any] = json.loads(result.stdout)
        return payload

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "assay", *args, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.folder,
            start_new_session=True,
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def ray_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Ray head with 2 CPUs (so 2 worker processes), in its own process group,
    which is killed as a whole at the end: nothing else on the machine is touched."""
    port = _free_port()
    temp_dir = tmp_path_factory.mktemp("ray")
    argv = [str(Path(sys.executable).with_name("ray")), "start", "--head", f"--port={port}"]
    head = subprocess.Popen(
        [*argv, "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={temp_dir}"],
        env={**os.environ, **RAY_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert head.wait(timeout=120) == 0, "ray start --head failed"
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(head.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, ray_address: str) -> Setup:
    folder = tmp_path_factory.mktemp("ray-rounds")
    corpus = folder / "corpus"
    for track in ("skills", "repositories"):
        tasks = sorted((ROOT / "corpus" / track).iterdir())
        malicious = [t for t in tasks if '"malicious"' in (t / "label.json").read_text()][:1]
        safe = [t for t in tasks if '"safe"' in (t / "label.json").read_text()][:1]
        for task in malicious + safe:
            shutil.copytree(task, corpus / track / task.name, symlinks=True)
    slow = folder / "slow_keyword.py"
    slow.write_text((ROOT / "agents" / "keyword.py").read_text() + SLOW_WRAPPER)
    secret = folder / "validator.secret"
    secret.write_bytes(secrets.token_bytes(32))
    secret.chmod(0o600)
    env = {**os.environ, **RAY_ENV, "XDG_DATA_HOME": str(folder / "data")}
    agents = (ROOT / "agents" / "keyword.py", slow)
    return Setup(folder, corpus, agents, secret, env, ray_address)


@pytest.fixture(scope="module")
def reference(setup: Setup) -> dict[str, Any]:
    """The round on the local executor: what every Ray round must reproduce byte for byte."""
    payload = setup.assay(*setup.run_args(setup.folder / "local.db", "local"))
    assert payload["status"] == "completed"
    payload["db"] = str(setup.folder / "local.db")
    return payload


def results(payload: dict[str, Any]) -> str:
    return json.dumps({k: payload[k] for k in ("scores", "weights", "round_weights", "draw")})


def rep_verdicts(db: Path | str) -> set[tuple[str, ...]]:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT agent_hash, track, task_id, rep, status, reason FROM reps")
        return {tuple(str(v) for v in row) for row in rows}


def stored_reps(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return int(con.execute("SELECT COUNT(*) FROM reps").fetchone()[0])
    except sqlite3.Error:
        return 0


def _running_a_rep(proc: Path) -> bool:
    """A Ray worker executing a rep right now (Ray titles it after the task)."""
    try:
        return proc.name.isdigit() and (proc / "cmdline").read_bytes().startswith(
            b"ray::_run_shipped"
        )
    except OSError:
        return False


def busy_ray_worker() -> int | None:
    return next((int(p.name) for p in Path("/proc").iterdir() if _running_a_rep(p)), None)


def kill_a_worker_mid_rep() -> None:
    """SIGKILL a worker while it runs a rep. It is stopped first and looked at again, so
    its rep cannot end between the look and the kill (on a loaded host it could, and the
    round then had nothing to retry)."""
    while True:
        victim = wait_for(busy_ray_worker, "a worker running a rep")
        try:
            os.kill(victim, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        if _running_a_rep(Path(f"/proc/{victim}")):
            os.kill(victim, signal.SIGKILL)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGCONT)


def wait_for(condition: Any, what: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def wait_for_reps(driver: subprocess.Popen[str], db: Path, count: int) -> None:
    """Until the round has stored `count` reps; if it never does, what its driver said."""
    try:
        wait_for(lambda: stored_reps(db) >= count, f"{count} stored reps")
    except AssertionError:
        os.killpg(driver.pid, signal.SIGKILL)
        _, said = driver.communicate()
        raise AssertionError(f"no {count} stored reps; the driver said: {said[-3000:]}") from None


def test_ray_round_is_byte_identical_to_the_local_round(
    setup: Setup, reference: dict[str, Any]
) -> None:
    db = setup.folder / "ray.db"
    payload = setup.assay(*setup.run_args(db, "ray"))
    assert payload["status"] == "completed", payload["reason"]
    assert results(payload) == results(reference)
    assert rep_verdicts(db) == rep_verdicts(reference["db"])


def test_a_worker_killed_mid_rep_is_rerun_not_held_against_the_agent(
    setup: Setup, reference: dict[str, Any]
) -> None:
    db = setup.folder / "worker-killed.db"
    driver = setup.spawn(*setup.run_args(db, "ray"))
    wait_for_reps(driver, db, 4)
    kill_a_worker_mid_rep()
    stdout, stderr = driver.communicate(timeout=240)
    assert "retried" in stderr, "the worker must have died mid-rep"
    payload = json.loads(stdout)
    assert payload["status"] == "completed", payload["reason"]
    assert stored_reps(db) == REPS_IN_ROUND  # the killed rep was stored once: its re-run
    assert rep_verdicts(db) == rep_verdicts(reference["db"])
    assert results(payload) == results(reference)


def test_driver_killed_mid_round_resumes_on_ray_like_local(
    setup: Setup, reference: dict[str, Any]
) -> None:
    db = setup.folder / "driver-killed.db"
    driver = setup.spawn(*setup.run_args(db, "ray"))
    wait_for_reps(driver, db, 6)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert 6 <= stored_reps(db) < REPS_IN_ROUND, "the kill must land mid-round"
    resume = ["round", "resume", "--db", str(db), "--secret-file", str(setup.secret)]
    payload = setup.assay(*resume, "--executor", "ray", "--address", setup.address)
    assert payload["status"] == "completed", payload["reason"]
    assert results(payload) == results(reference)
    with sqlite3.connect(db) as con:
        total, distinct = con.execute(
            "SELECT COUNT(*), COUNT(DISTINCT agent_hash || track || task_id || rep) FROM reps"
        ).fetchone()
    assert total == distinct == REPS_IN_ROUND
