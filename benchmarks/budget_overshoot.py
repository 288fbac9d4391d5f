"""CPU budget overshoot: agents burning CPU in 1 and in 8 processes, 1 s budget.

The overshoot of a run is the CPU time the whole tree consumed past the budget
(cgroup accounting), measured for both shapes side by side in one run.
Last line: overshoot=<worst seconds past the budget>.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from assay.mechanism.spec import MechanismSpec, Track, parse_spec
from assay.records.agent import Agent
from assay.records.outcome import FailureReason
from assay.runner.rep import RepTask, run_rep
from assay.sandbox.bwrap import BwrapBackend
from assay.schema.mechanism_file import pinned_bytes

BUDGET_S = 1.0
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def burner(processes: int) -> bytes:
    return f"""
import os

def agent_main(context):
    for _ in range({processes} - 1):
        if os.fork() == 0:
            break
    while True:
        pass
""".encode()


def one_second_spec() -> MechanismSpec:
    raw = re.sub(r"cpu_budget_s = [0-9.]+", f"cpu_budget_s = {BUDGET_S}", pinned_bytes().decode())
    return parse_spec(raw.encode())


def main() -> None:
    backend = BwrapBackend()
    backend.sweep_stale()
    spec = one_second_spec()
    worst = 0.0
    with tempfile.TemporaryDirectory() as artifact:
        for n in range(ROUNDS):
            for processes in (1, 8):
                agent = Agent(burner(processes))
                task = RepTask(agent, Track.SKILLS, "b", Path(artifact), n, "seed")
                outcome = run_rep(task, backend=backend, spec=spec, secret=b"bench")
                assert outcome.reason is FailureReason.CPU_BUDGET, outcome.reason
                over = outcome.cpu_s - BUDGET_S
                worst = max(worst, over)
                print(f"processes={processes} round={n} cpu_s={outcome.cpu_s:.4f} over={over:.4f}")
    print(f"overshoot={worst:.4f}")


if __name__ == "__main__":
    main()
