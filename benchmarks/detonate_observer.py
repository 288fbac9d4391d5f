"""Detonation observed with eBPF beside the same detonation under strace, in one run.

Per behavioural track, one bundled sample (for packages, a Python one) is detonated
twice, its first profile only, under each observer. Printed per track and observer: the
detonation's wall time and the profile's CPU as the backend bills it (the sandboxed tree
and its observer's process, from the command's release on). What the eBPF observer
costs before that, bpftrace compiling and attaching its program once per backend (its
session, which every later run shares), is printed once beside them (strace's start,
~12 ms a run, is not).

Then the Python package's whole detonation (every profile), on a fresh backend per
observer, twice: the first pays the eBPF session's start (as `assay detonate` does), the
second finds it running (as a validator's later detonations do). Its CPU is all of it:
the validator's process (planning, mapping, the session's reader), the sandboxed trees,
and the observer's processes (each run's strace; bpftrace, its start included).

Then the timing probe: one program, in the sandbox under each observer and outside
any sandbox, times 2,000 failing opens of missing files and 2,000 stats of the same
names. strace stops the process on every open (opens are traced, stats are not), so
the ratio of the two times tells a traced process from an untraced one. eBPF stops
nothing, but each call it prints is an event its reader wakes for. Each ratio is the
median of PROBES runs, the three places taking turns (the host's load moves it).

Run as root (bubblewrap, cgroups, bpftrace), under the heavy-work lock.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.corpus.native import NativeCorpus
from assay.detonate import detonate
from assay.detonate.steps import PROFILES
from assay.mechanism.spec import BEHAVIOURAL_TRACKS, Track
from assay.sandbox.bwrap import ebpf
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.bwrap.cgroups import identity_group
from assay.sandbox.interface import (
    InputFile,
    Observation,
    ObserverKind,
    ResourceLimits,
    SealedRequest,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
ROUNDS = 2
PROBES = 5
PROBE = """
import os, time
names = [f"/tmp/missing-{i}" for i in range(2000)]
def timed(call):
    started = time.perf_counter()
    for name in names:
        try:
            call(name)
        except OSError:
            pass
    return time.perf_counter() - started
timed(os.stat)  # warm
opens, stats = timed(lambda n: os.open(n, os.O_RDONLY)), timed(os.stat)
print(f"{opens / stats:.2f}")
"""
LIMITS = ResourceLimits(
    cpu_budget_s=20.0,
    wall_backstop_s=60.0,
    memory_bytes=256 << 20,
    pids=32,
    workspace_bytes=4 << 20,
    result_bytes=1 << 16,
)


def _sample(track: Track) -> Path:
    """The first bundled sample of the track (for packages, a Python one pip installs)."""
    for task in NativeCorpus(CORPUS).tasks(track):
        artifact = Path(task.artifact_dir)
        if track is not Track.PACKAGES or (artifact / "pyproject.toml").exists():
            return artifact
    raise SystemExit(f"no bundled {track.value} sample")


def _detonation(
    backend: BwrapBackend, artifact: Path, track: Track, observer: ObserverKind
) -> tuple[float, float]:
    started = time.monotonic()
    result = detonate(artifact, track, backend=backend, only={PROFILES[0].name}, observer=observer)
    return time.monotonic() - started, sum(p.cpu_s for p in result.profiles)


class _Billing(BwrapBackend):
    """The backend, adding up what its runs' observers were billed."""

    tracer_cpu_s = 0.0

    def run(self, request: SealedRequest) -> Observation:
        observation = super().run(request)
        self.tracer_cpu_s += observation.tracer_cpu_s
        return observation


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _bpftrace_cpu(backend: BwrapBackend) -> float:
    session = backend._ebpf
    return _process_cpu(session.process.pid) if session is not None else 0.0


def _whole_detonation(backend: _Billing, artifact: Path, observer: ObserverKind) -> str:
    """Wall time and all the CPU of one detonation (see the module's docstring)."""
    own, billed, bpftrace = _own_cpu(), backend.tracer_cpu_s, _bpftrace_cpu(backend)
    started = time.monotonic()
    result = detonate(artifact, Track.PACKAGES, backend=backend, observer=observer)
    wall = time.monotonic() - started
    tracer = backend.tracer_cpu_s - billed
    trees = sum(p.cpu_s for p in result.profiles) - tracer
    observed = _bpftrace_cpu(backend) - bpftrace if observer is ObserverKind.EBPF else tracer
    own = _own_cpu() - own
    total = own + trees + observed
    return (
        f"wall {wall:5.2f} s, cpu {total:5.2f} s (validator {own:.2f}, sandboxed {trees:.2f},"
        f" observer {observed:.2f}; {len(result.profiles)} profiles)"
    )


def _bpftrace_start_cpu() -> float:
    """CPU seconds bpftrace takes to compile and attach the observer's program."""
    group = identity_group()
    try:
        with tempfile.TemporaryDirectory() as work:
            session = ebpf.Session(group.path.parent.stat().st_ino, Path(work))
            session.wait_ready()
            cpu = _process_cpu(session.process.pid)
            session.stop()
            return cpu
    finally:
        group.remove()


def _probe_ratio(backend: BwrapBackend, observer: ObserverKind) -> str:
    request = SealedRequest(
        argv=(backend.python, "-I", "-S", "/task/input/probe.py"),
        limits=LIMITS,
        inputs=(InputFile("probe.py", PROBE.encode()),),
        observer=observer,
    )
    return backend.run(request).stdout.data.decode().strip()


def main() -> None:
    backend = BwrapBackend()
    try:
        for track in BEHAVIOURAL_TRACKS:
            artifact = _sample(track)
            for observer in (ObserverKind.EBPF, ObserverKind.STRACE):
                runs = [_detonation(backend, artifact, track, observer) for _ in range(ROUNDS)]
                wall, cpu = (min(r[i] for r in runs) for i in range(2))
                print(
                    f"{track.value:12} {observer.value:6} profile {PROFILES[0].name}: "
                    f"wall {wall:5.2f} s, profile cpu {cpu:5.2f} s "
                    f"({artifact.parent.name}, best of {ROUNDS})",
                    flush=True,
                )
        print(f"bpftrace start per backend (compile, attach): {_bpftrace_start_cpu():.2f} CPU-s")
        ratios: dict[str, list[float]] = {"outside": [], "ebpf": [], "strace": []}
        for _ in range(PROBES):
            outside = subprocess.run(
                [sys.executable, "-I", "-S", "-c", PROBE], capture_output=True, text=True
            )
            ratios["outside"].append(float(outside.stdout))
            for observer in (ObserverKind.EBPF, ObserverKind.STRACE):
                ratios[observer.value].append(float(_probe_ratio(backend, observer)))
        shown = ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in ratios.items())
        print(f"timing probe (failing opens / stats, median of {PROBES}): {shown}")
    finally:
        backend.release()
    package = _sample(Track.PACKAGES)
    for observer in (ObserverKind.EBPF, ObserverKind.STRACE):
        fresh = _Billing()
        try:
            for which in ("first", "second"):
                shown = _whole_detonation(fresh, package, observer)
                print(
                    f"whole detonation of {package.parent.name}, {observer.value:6} {which:6}:"
                    f" {shown}",
                    flush=True,
                )
        finally:
            fresh.release()


if __name__ == "__main__":
    main()
