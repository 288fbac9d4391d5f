"""Intake flood: an honest miner's submission and the validator's cost under each flood
a hostile miner can send the intake, beside a quiet control, in one run.

A real `assay validator serve` with its intake on 127.0.0.1 (started with the usual
default soft file limit of 1,024, as under a unit without `LimitNOFILE`). Each scenario
opens its flood, then sends SUBMITS honest submissions, one a second (each from a
hotkey of its own, so none is rate limited) with a 5 s client timeout, while the flood
stays open; then closes the flood and lets the intake settle. Every scenario thus lasts
about as long, the quiet one included. Scenarios:

- quiet: nothing else open (the control);
- idle: 1,100 connections, half sending nothing, half the start of a request's headers;
- stalled: 150 bodies of 2 MiB from 150 registered hotkeys, signed headers and then a
  stall: a third declare 2 MiB, a third are chunked with no length, a third declare a
  length within the cap and send half of it;
- both: the two floods at once;
- quiet-2: the control again, after the floods (what they left behind).

Per scenario: the median honest submit latency, the validator's resident memory at the
end of the flood above its quiet level, and its CPU share (CPU seconds over wall
seconds) during the scenario; each as a ratio to the quiet control. Also how many of the
flood's sockets the intake still held when the submissions were answered.
Last line: worst_submit_ratio=<max latency ratio> worst_rss_growth_mib=<max growth>
failed_submits=<submissions not accepted, target 0>.
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bittensor_core import Keypair

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from intake_floods import (  # a test helper, found through the path above
    FLOODERS,
    IDLE_CONNECTIONS,
    STALLED_BODIES,
    Served,
    close_all,
    cpu_seconds,
    honest_submit,
    idle_connections,
    raise_file_limit,
    rss_bytes,
    served,
    stalled_bodies,
    still_open,
    write_subnet,
)

SUBMITS = int(os.environ.get("SUBMITS", "5"))
PERIOD_S = 1.0  # one honest submission a second, so every scenario lasts as long
SETTLE_S = 12.0  # past the intake's 10 s header deadline: the flood's leftovers are gone
Flood = Callable[[int], list[socket.socket]]
SCENARIOS: dict[str, tuple[Flood, ...]] = {
    "quiet": (),
    "idle": (idle_connections,),
    "stalled": (stalled_bodies,),
    "both": (idle_connections, stalled_bodies),
    "quiet-2": (),  # the control again, after the floods: what they left behind
}
HONEST = {
    name: tuple(Keypair.create_from_uri(f"//Honest-{name}-{i}") for i in range(SUBMITS))
    for name in SCENARIOS
}


def scenario(intake: Served, name: str) -> dict[str, float]:
    pid = intake.process.pid
    cpu_before, wall_before = cpu_seconds(pid), time.monotonic()
    floods = [open_flood(intake.port) for open_flood in SCENARIOS[name]]
    latencies, failed = [], 0
    try:
        for i, key in enumerate(HONEST[name]):
            time.sleep(max(0.0, wall_before + (i + 1) * PERIOD_S - time.monotonic()))
            started = time.monotonic()
            try:
                status, _ = honest_submit(intake, key=key)
            except (OSError, ValueError):  # no answer within the 5 s, or not JSON
                status = 0
            latencies.append(time.monotonic() - started)
            failed += status != 200
        held = sum(still_open(flood) for flood in floods)
        rss = rss_bytes(pid)
    finally:
        close_all(*floods)
    cpu_s, wall_s = cpu_seconds(pid) - cpu_before, time.monotonic() - wall_before
    time.sleep(SETTLE_S)
    return {
        "submit_s": statistics.median(latencies),
        "rss": float(rss),
        "cpu_share": cpu_s / wall_s,
        "held": float(held),
        "failed": float(failed),
    }


def main() -> None:
    raise_file_limit(2 * (IDLE_CONNECTIONS + STALLED_BODIES) + 256)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        honest = tuple(key for keys in HONEST.values() for key in keys)
        write_subnet(root, (*honest, *FLOODERS))
        with served(root) as intake:
            # A first submission loads what every later one uses.
            honest_submit(intake, key=Keypair.create_from_uri("//Honest-warm-up"))
            results = {name: scenario(intake, name) for name in SCENARIOS}
    quiet = results["quiet"]
    floor = 0.01  # a CPU share below 1% is measured as 1%, so ratios stay finite
    print(
        f"{SUBMITS} honest submits per scenario, {IDLE_CONNECTIONS} idle connections, "
        f"{STALLED_BODIES} stalled bodies"
    )
    for name, got in results.items():
        submit_ratio = got["submit_s"] / quiet["submit_s"]
        cpu_ratio = max(got["cpu_share"], floor) / max(quiet["cpu_share"], floor)
        growth = (got["rss"] - quiet["rss"]) / 2**20
        print(
            f"{name:8s} submit {got['submit_s'] * 1000:7.1f} ms ({submit_ratio:4.2f}x)  "
            f"rss {got['rss'] / 2**20:6.1f} MiB ({got['rss'] / quiet['rss']:4.2f}x, "
            f"{growth:+6.1f} MiB)  cpu {got['cpu_share']:6.1%} ({cpu_ratio:4.2f}x)  "
            f"held {int(got['held']):4d}  failed {int(got['failed'])}"
        )
    worst_submit = max(r["submit_s"] for r in results.values()) / quiet["submit_s"]
    worst_growth = max(r["rss"] - quiet["rss"] for r in results.values()) / 2**20
    failed = int(sum(r["failed"] for r in results.values()))
    print(
        f"worst_submit_ratio={worst_submit:.2f} worst_rss_growth_mib={worst_growth:.1f} "
        f"failed_submits={failed}"
    )


if __name__ == "__main__":
    main()
