"""Sandbox overhead: a full sealed rep against the same shim and agent run bare.

Sealed: `run_rep` of a no-op agent that threads the probe (bubblewrap, strace,
cgroups, gates, copy-out and cleanup included). Bare: the very same shim and
agent run directly on the host with the same interpreter and flags, unsandboxed
and untraced, and the same report parsing and probe-file comparison - the
physical floor for that work. Pairs are interleaved so drift hits both sides.

Two sealed series run side by side with the bare one: the backend as configured
by default (it starts the next sandbox - strace, launcher, bubblewrap's
namespaces and mounts - right after each run, so that start-up overlaps the
caller's own work between runs), and the same backend with that prestart off
(every rep starts cold). Each measurement is followed by a short unmeasured
pause, so no series' background work bleeds into another's timing.

The benchmark runs in a private mount namespace where /etc/resolv.conf points
at 127.0.0.1, so the bare run's probe lookup fails on loopback exactly as the
sandboxed one does (and no query leaves the machine). Needs root.

Last line: ratio=<median sealed (default backend) / median bare>; the line before
it gives the cold ratio.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from assay.mechanism.spec import Track
from assay.records.agent import Agent
from assay.runner.context import build_context
from assay.runner.probe import Probe
from assay.runner.rep import RepTask, run_rep, shim_config, shim_source
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.script import PYTHON_FLAGS
from assay.schema.mechanism_file import pinned
from assay.schema.report import parse_report

PAIRS = int(os.environ.get("PAIRS", "30"))
SETTLE_S = 0.1  # unmeasured pause after each measurement
SECRET = b"benchmark-secret"
AGENT = b"""
import socket, subprocess

def agent_main(context):
    p = context["probe"]
    open(p["file_path"], "w").write(p["file_content"])
    try:
        socket.getaddrinfo(p["dns_host"], 80)
    except OSError:
        pass
    subprocess.run(["echo", p["process_echo"]], capture_output=True)
    return {
        "verdict": {"decision": "ALLOW", "risk_score": 0, "confidence": 0.5, "summary": "no-op"},
        "evidence": {"action_plane": {"capabilities": []},
                     "context_plane": {"injected_instructions": []}},
        "findings": [],
    }
"""


@contextlib.contextmanager
def private_loopback_resolver(scratch: Path) -> Iterator[None]:
    libc = ctypes.CDLL(None, use_errno=True)
    ms_rec, ms_private, ms_bind, mnt_detach = 16384, 1 << 18, 4096, 2
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        raise SystemExit("needs root (a private mount namespace)")
    libc.mount(None, b"/", None, ms_rec | ms_private, None)
    resolv = scratch / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions attempts:1 timeout:1\n")
    if libc.mount(bytes(resolv), b"/etc/resolv.conf", None, ms_bind, None) != 0:
        raise SystemExit("cannot bind resolv.conf")
    try:
        yield
    finally:
        libc.umount2(b"/etc/resolv.conf", mnt_detach)


def sealed_rep(backend: BwrapBackend, task: RepTask) -> float:
    started = time.perf_counter()
    outcome = run_rep(task, backend=backend, spec=pinned(), secret=SECRET)
    elapsed = time.perf_counter() - started
    assert outcome.completed, outcome.detail
    return elapsed


def bare_rep(backend: BwrapBackend, task: RepTask, python: str) -> float:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        probe = Probe.from_nonce(os.urandom(32).hex())
        context = build_context(
            track=task.track.value, nonce="00" * 32, probe=probe, observed=None, backend=backend
        )
        context["probe"] = {**probe.context(), "file_path": str(root / probe.file_name)}
        limits = pinned().sandbox
        config = shim_config(task.agent, pinned(), backend)
        for name, data in (
            ("shim.py", shim_source()),
            ("agent.py", task.agent.code),
            ("shim.json", json.dumps(config).encode()),
            ("context.json", json.dumps(context).encode()),
        ):
            (root / name).write_bytes(data)
        read_fd, write_fd = os.pipe()
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "ASSAY_RESULT_FD": str(write_fd)}
        proc = subprocess.Popen(
            [python, *PYTHON_FLAGS, str(root / "shim.py"), str(root)],
            pass_fds=(write_fd,),
            env=env,
            stdout=subprocess.DEVNULL,
        )
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as result:
            raw = result.read()
        assert proc.wait() == 0
        parse_report(
            raw, task.track, max_bytes=limits.report_bytes, max_items=pinned().max_items_per_report
        )
        assert (root / probe.file_name).read_bytes() == probe.file_content.encode()
    return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch, private_loopback_resolver(Path(scratch)):
        compare(Path(scratch))


def compare(scratch: Path) -> None:
    warm, cold = BwrapBackend(), BwrapBackend(prestart=False)
    warm.sweep_stale()
    task = RepTask(Agent(AGENT), Track.SKILLS, "bench", scratch, 0, "seed")
    series: dict[str, list[float]] = {"sealed": [], "sealed_cold": [], "bare": []}
    measure = {
        "sealed": lambda: sealed_rep(warm, task),
        "sealed_cold": lambda: sealed_rep(cold, task),
        "bare": lambda: bare_rep(warm, task, warm.python),
    }
    for run in measure.values():  # warm caches on every side once
        run()
    for _ in range(PAIRS):
        for name, run in measure.items():
            series[name].append(run())
            time.sleep(SETTLE_S)
    medians = {name: statistics.median(times) for name, times in series.items()}
    print(f"pairs={PAIRS} " + " ".join(f"{n}_median_ms={m * 1000:.1f}" for n, m in medians.items()))
    print(f"cold_ratio={medians['sealed_cold'] / medians['bare']:.3f}")
    print(f"ratio={medians['sealed'] / medians['bare']:.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
