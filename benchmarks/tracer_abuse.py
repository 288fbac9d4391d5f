"""Tracer abuse: what a hostile run's syscalls cost the validator, against a well-behaved run.

Each class is a small program that threads the probe and then abuses the
tracer: sends to many distinct UDP peers, `sendmsg` with 1,024 x 4 KiB iovecs,
opens of many distinct 4 KiB paths, failed execs with a 4,096 x 4 KiB argv,
output a byte at a time for 1 s, and successful `writev` of 1,024 x 4 KiB
buffers until the trace cap ends the run.
Each runs sealed under both trace sets, with the limits of its caller: an
agent's rep (`liveness`, the skills track's limits) and a detonation profile
(`full`, detonation's default budget), side by side with well-behaved runs of
the same set (one that computes for 1 s, the control of the ratios, and one that
only threads the probe), interleaved round by round.

Per run it measures the validator's own CPU (this process, every thread: run,
trace parse, cleanup), its peak resident memory during the run (the high-water
mark is reset before each), the tracer's CPU, which the backend bills to the
run (it counts against the run's CPU budget like the tree's own), and the run's
wall time, for which the validator polls the run's limits (every 4 ms near the
CPU budget or the wall backstop, up to every 0.2 s far from both). The control's
cost fell each time polling got sparser (adaptive, then 50 ms to 0.2 s), so the
ratios rose although every class got cheaper; absolute figures are printed too.
What a flood class costs beyond the control is mostly summarising its trace.

Last line: worst_cpu_ratio=<max over classes of validator CPU / control's>
worst_mem_ratio=<same for peak memory>, over agents' reps (target <= 2 for both,
issue 11: "per hostile rep"). The line before it gives the same for detonation
profiles, not reps: a detonation summarises what an artifact did up to the trace
cap (32 MiB), so its worst classes cost reading and freeing that much trace.
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
    # Well-behaved: threads the probe, then analyses for about as long as the
    # longest hostile run takes (the validator supervises a run for its duration).
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


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="assay-bench-", dir="/tmp"))
    base.chmod(0o711)
    backend = BwrapBackend(runtime_base=base / "rt", prestart=False)
    backend.sweep_stale()
    limits = {
        TraceSet.LIVENESS: limits_for(pinned(), Track.SKILLS),
        TraceSet.FULL: DEFAULT_BUDGET.limits(),
    }
    costs: dict[tuple[TraceSet, str], list[Cost]] = {}
    for trace in limits:  # warm caches once
        measure(backend, "", trace, limits[trace])
    for _ in range(ROUNDS):
        for trace, trace_limits in limits.items():
            for name, code in CLASSES.items():
                costs.setdefault((trace, name), []).append(
                    measure(backend, code, trace, trace_limits)
                )
    worst: dict[TraceSet, tuple[float, float]] = {}
    print(f"rounds={ROUNDS} loadavg={Path('/proc/loadavg').read_text().split()[0]}")
    for trace in limits:
        worst_cpu = worst_mem = 0.0
        control = costs[(trace, "control")]
        control_cpu = statistics.median(c.validator_cpu_s for c in control)
        control_mem = statistics.median(c.peak_rss_bytes for c in control)
        for name in CLASSES:
            runs = costs[(trace, name)]
            cpu = statistics.median(c.validator_cpu_s for c in runs)
            mem = statistics.median(c.peak_rss_bytes for c in runs)
            cpu_ratio, mem_ratio = cpu / control_cpu, mem / control_mem
            worst_cpu, worst_mem = max(worst_cpu, cpu_ratio), max(worst_mem, mem_ratio)
            print(
                f"{trace.value:8} {name:12} validator_cpu_ms={cpu * 1000:7.1f} "
                f"peak_rss_mb={mem / 2**20:6.1f} cpu_ratio={cpu_ratio:5.2f} "
                f"mem_ratio={mem_ratio:4.2f} "
                f"tracer_cpu_ms={statistics.median(c.tracer_cpu_s for c in runs) * 1000:7.1f} "
                f"run_cpu_ms={statistics.median(c.run_cpu_s for c in runs) * 1000:7.1f} "
                f"wall_ms={statistics.median(c.wall_s for c in runs) * 1000:7.1f} "
                f"ended={runs[-1].ended}"
            )
        worst[trace] = (worst_cpu, worst_mem)
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
