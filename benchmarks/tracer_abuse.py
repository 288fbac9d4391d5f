"""Tracer abuse: what a hostile run's syscalls cost the validator, against a well-behaved run.

Each class is a small program that threads the probe and then abuses the
tracer: sends to many distinct UDP peers, `sendmsg` with 1,024 x 4 KiB iovecs,
opens of many distinct 4 KiB paths, failed execs with a 4,096 x 4 KiB argv,
output a byte at a time for 1 s, and successful `writev` of 1,024 x 4 KiB
buffers until the trace cap ends the run.
Each runs sealed under both trace sets, with the limits of its caller: an
agent's rep (`liveness`, the skills track's limits) and a detonation profile
(`full`, detonation's default budget). Every run is paired with a control of the
same wall time: a run that threads the probe and then sleeps as long as the run
before it lasted, so the validator supervises both for as long (its fixed cost
per run, ~15 ms, and its limit polls, every 4 ms near the CPU budget or the wall
backstop, up to every 0.2 s far from both, are then the same in both). Two
well-behaved classes are measured the same way: one that computes for 1 s and
one that only threads the probe.

Per run it measures the validator's own CPU (this process, every thread: run,
trace parse, cleanup), its peak resident memory during the run (the high-water
mark is reset before each), the tracer's CPU, which the backend bills to the
run (it counts against the run's CPU budget like the tree's own), and the run's
wall time. What a flood class costs beyond its control is mostly summarising its
trace; what `stderr_drip` costs beyond it is waking to drain its output, which
the backend batches (`OUTPUT_BATCH_S`).

Last line: worst_cpu_ratio=<max over classes of validator CPU / its same-wall
control's> worst_mem_ratio=<same for peak memory>, over agents' reps (target
<= 2 for both, issue 22: "each hostile class against a control of the same wall
time"). The line before it gives the same for detonation profiles, not reps: a
detonation summarises what an artifact did up to the trace cap (2 MiB without an
installer or build), so its worst classes cost reading that much trace, and freeing what the
tracer wrote past it before the run was ended (up to the trace tmpfs's slack).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from assay.detonate.core import DEFAULT_BUDGET
from assay.mechanism.spec import Track
from assay.runner.rep import limits_for
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.interface import InputFile, Observation, ResourceLimits, SealedRequest, TraceSet
from assay.schema.mechanism_file import pinned

ROUNDS = int(os.environ.get("ROUNDS", "3"))

PRELUDE = """
import os, socket, subprocess
probe = "n0123456789abcdef01234567.probe.assay.invalid"
try:
    socket.getaddrinfo(probe, 80)
except OSError:
    pass
subprocess.run(["echo", "assay-echo-0123456789abcdef01234567"], capture_output=True)
"""

CLASSES = {
    # Well-behaved: threads the probe, then computes for 1 s.
    "control": """
import time
end = time.process_time() + 1.0
while time.process_time() < end:
    pass
""",
    "control_idle": "",
    "udp_peers": """
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in range(20000):
    s.sendto(b"x", (f"127.{n // 62500}.{n // 250 % 250}.{n % 250 + 1}", 1024 + n % 60000))
""",
    "big_iovec": """
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
bufs = [b"A" * 4096] * 1024
for _ in range(120):
    try:
        s.sendmsg(bufs, [], 0, ("127.0.0.1", 9))
    except OSError:
        pass
""",
    "many_opens": """
for n in range(20000):
    path = "/tmp/" + "/".join(f"{n:08d}" + "d" * 240 for _ in range(16))
    try:
        open(path)
    except OSError:
        pass
""",
    "huge_argv": """
for _ in range(5):
    try:
        os.execv("/nonexistent", ["x" * 4096] * 4096)
    except OSError:
        pass
""",
    # Output a byte at a time for as long as the control runs: each write wakes the
    # validator to drain it.
    "stderr_drip": """
import time
end = time.monotonic() + 1.0
while time.monotonic() < end:
    os.write(2, b"x")
    time.sleep(0.0002)
""",
    "writev_flood": """
fd = os.open("/dev/null", os.O_WRONLY)
bufs = [b"A" * 4096] * 1024
for _ in range(2000):
    os.writev(fd, bufs)
""",
}


@dataclass(frozen=True)
class Cost:
    validator_cpu_s: float
    peak_rss_bytes: int
    tracer_cpu_s: float
    run_cpu_s: float
    wall_s: float
    ended: str


def _rss_high_water() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def measure(backend: BwrapBackend, code: str, trace: TraceSet, limits: ResourceLimits) -> Cost:
    request = SealedRequest(
        argv=(backend.python, "-I", "-S", "/task/input/a.py"),
        limits=limits,
        inputs=(InputFile("a.py", (PRELUDE + code).encode()),),
        trace=trace,
    )
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
    started = time.process_time()
    observation: Observation = backend.run(request)
    backend.release()  # this run's cleanup, off the caller's path otherwise
    cpu = time.process_time() - started
    hit = observation.limit_hit
    ended = hit.value if hit else f"exit {observation.exit_code}"
    return Cost(
        cpu,
        _rss_high_water(),
        observation.tracer_cpu_s,
        observation.cpu_s,
        observation.wall_s,
        ended,
    )


def sleeper(seconds: float) -> str:
    """The control of a run that lasted `seconds`: threads the probe, then sleeps."""
    return f"import time\ntime.sleep({max(0.0, seconds):.4f})\n"


def paired(
    backend: BwrapBackend, code: str, trace: TraceSet, limits: ResourceLimits, start_s: float
) -> tuple[Cost, Cost]:
    """The class's run and, right after it, a control sleeping as long (less the
    `start_s` a run that only threads the probe takes)."""
    run = measure(backend, code, trace, limits)
    return run, measure(backend, sleeper(run.wall_s - start_s), trace, limits)


def _median(costs: list[Cost], field: str) -> float:
    return statistics.median(float(getattr(c, field)) for c in costs)


def report(trace: TraceSet, costs: dict[str, list[tuple[Cost, Cost]]]) -> tuple[float, float]:
    """One line per class; the worst CPU and memory ratios against the controls."""
    worst_cpu = worst_mem = 0.0
    for name, pairs in costs.items():
        runs, controls = [p[0] for p in pairs], [p[1] for p in pairs]
        cpu, control_cpu = _median(runs, "validator_cpu_s"), _median(controls, "validator_cpu_s")
        mem, control_mem = _median(runs, "peak_rss_bytes"), _median(controls, "peak_rss_bytes")
        cpu_ratio, mem_ratio = cpu / control_cpu, mem / control_mem
        worst_cpu, worst_mem = max(worst_cpu, cpu_ratio), max(worst_mem, mem_ratio)
        print(
            f"{trace.value:8} {name:12} validator_cpu_ms={cpu * 1000:7.1f} "
            f"control_cpu_ms={control_cpu * 1000:6.1f} cpu_ratio={cpu_ratio:5.2f} "
            f"peak_rss_mb={mem / 2**20:6.1f} mem_ratio={mem_ratio:4.2f} "
            f"tracer_cpu_ms={_median(runs, 'tracer_cpu_s') * 1000:7.1f} "
            f"run_cpu_ms={_median(runs, 'run_cpu_s') * 1000:7.1f} "
            f"wall_ms={_median(runs, 'wall_s') * 1000:7.1f} "
            f"control_wall_ms={_median(controls, 'wall_s') * 1000:7.1f} "
            f"ended={runs[-1].ended}"
        )
    return worst_cpu, worst_mem


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="assay-bench-", dir="/tmp"))
    base.chmod(0o711)
    backend = BwrapBackend(runtime_base=base / "rt", prestart=False)
    backend.sweep_stale()
    limits = {
        TraceSet.LIVENESS: limits_for(pinned(), Track.SKILLS),
        TraceSet.FULL: DEFAULT_BUDGET.limits(),
    }
    # Warms caches, and times the start a sleeping control adds to its sleep.
    start_s = {
        trace: statistics.median(measure(backend, "", trace, limits[trace]).wall_s for _ in "abc")
        for trace in limits
    }
    costs: dict[TraceSet, dict[str, list[tuple[Cost, Cost]]]] = {t: {} for t in limits}
    for _ in range(ROUNDS):
        for trace, trace_limits in limits.items():
            for name, code in CLASSES.items():
                costs[trace].setdefault(name, []).append(
                    paired(backend, code, trace, trace_limits, start_s[trace])
                )
    print(f"rounds={ROUNDS} loadavg={Path('/proc/loadavg').read_text().split()[0]}")
    worst = {trace: report(trace, costs[trace]) for trace in limits}
    detonation_cpu, detonation_mem = worst[TraceSet.FULL]
    print(
        f"detonation_worst_cpu_ratio={detonation_cpu:.2f} "
        f"detonation_worst_mem_ratio={detonation_mem:.2f}"
    )
    rep_cpu, rep_mem = worst[TraceSet.LIVENESS]
    print(f"worst_cpu_ratio={rep_cpu:.2f} worst_mem_ratio={rep_mem:.2f}")
    sys.stdout.flush()
    shutil.rmtree(base)


if __name__ == "__main__":
    main()
