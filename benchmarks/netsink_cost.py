"""What a run's network sink costs: the same sealed run with and without one.

A detonation profile's sandbox runs in a network namespace of its own whose sink the
validator starts before the sandbox (`assay.sandbox.bwrap.netsink`). This runs one
trivial command ROUNDS times each way, taking turns, and prints the median wall time of
`backend.run` and the validator's CPU for it (its own and its children's: the sink, its
namespace's set-up, bubblewrap's start), so a change to the sink's start-up shows here.
On the small VM this was written on: 82 ms wall and 76 ms of CPU with the sink, 76 ms
and 70 ms without.

Run as root (bubblewrap, cgroups, namespaces), under the heavy-work lock.
"""

from __future__ import annotations

import resource
import statistics
import time

from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.interface import Home, ResourceLimits, SealedRequest

ROUNDS = 12
LIMITS = ResourceLimits(
    cpu_budget_s=5.0,
    wall_backstop_s=20.0,
    memory_bytes=256 << 20,
    pids=32,
    workspace_bytes=4 << 20,
    result_bytes=1 << 16,
)


def _cpu_s() -> float:
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    backend = BwrapBackend()
    figures: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
    try:
        for n in range(ROUNDS):
            for sink in (False, True):
                # A home, as a detonation's: its own hostname each time, so no run is
                # one started ahead (a detonation's profiles never are).
                request = SealedRequest(
                    argv=("/bin/true",),
                    limits=LIMITS,
                    hostname=f"bench-{n}-{int(sink)}",
                    home=Home("dev", ()),
                    network_sink=sink,
                )
                cpu, started = _cpu_s(), time.monotonic()
                backend.run(request)
                figures[sink][0].append(time.monotonic() - started)
                figures[sink][1].append(_cpu_s() - cpu)
    finally:
        backend.release()
    for sink, (walls, cpus) in figures.items():
        wall, cpu = statistics.median(walls) * 1000, statistics.median(cpus) * 1000
        print(
            f"{'with' if sink else 'without'} a network sink: {wall:.0f} ms wall, {cpu:.0f} ms CPU"
        )


if __name__ == "__main__":
    main()
