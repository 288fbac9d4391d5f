"""Score a million rep records (256 agents over four tracks) from a file.

Prints the wall time of reading and of scoring, and records per second.
Target (issue 2): the whole job under 10 s on a 2-core machine.

    .venv/bin/python benchmarks/score_throughput.py [--agents 256] [--records 1000000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from synthetic_records import TRACK_REPS, TRACK_TASKS, write

from assay.schema.mechanism_file import pinned
from assay.validator.parallel import score_file

SPEC = pinned()


def scale_for(records: int, agents: int) -> float:
    per_scale = sum(TRACK_TASKS[t] * TRACK_REPS[t] for t in TRACK_TASKS) * agents
    return records / per_scale


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=256)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.jsonl"
        count = write(str(path), args.agents, scale=scale_for(args.records, args.agents))
        size_mb = path.stat().st_size / 1e6
        started = time.perf_counter()
        card = score_file(path, salt="bench", spec=SPEC)
        total_s = time.perf_counter() - started
    print(f"records={count} file_mb={size_mb:.0f} agents={args.agents} weights={len(card.weights)}")
    print(f"read_and_score_s={total_s:.2f} (all cores, assay.validator.parallel.score_file)")
    print(f"records_per_second={count / total_s:.0f}")


if __name__ == "__main__":
    main()
