"""Admission time for 10, 100 and 1,000 submissions: copy screening must stay near-linear.

Each submission is a distinct seeded synthetic agent about the size of the bundled
keyword agent (some 1,300 shingles); one in ten is a renamed and padded copy of an
earlier one. Admission runs as a round's does: arrivals and normalised forms recorded in
a real round store, then screening (MinHash LSH Ensemble candidates, exact containment
checks). Printed per size: seconds, milliseconds per submission, copies found, and the
time per submission as a ratio of the 10-submission run's (1.0 is linear).
Last line: per_submission_ratio_1000=<ratio>.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from assay.attest.intake import Submission, admit
from assay.mechanism.spec import Track
from assay.records.agent import Agent
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store
from assay.validator.arrivals import StoreArrivals

SIZES = (10, 100, 1000)
FUNCTIONS = 30  # per agent
OPS = ("+", "-", "*", "//", "%", "^", "|", "&")
CALLS = ("len", "sorted", "min", "max", "sum", "abs", "str", "repr", "hash", "tuple")


def _function(rng: random.Random, index: int) -> str:
    lines = [f"def f{index}(a, b, items):"]
    for step in range(rng.randint(4, 9)):
        op, call = rng.choice(OPS), rng.choice(CALLS)
        pick = rng.random()
        if pick < 0.3:
            lines.append(f"    v{step} = {call}(items) {op} {rng.randint(1, 999)}")
        elif pick < 0.6:
            word = "".join(rng.choice("abcdefghij") for _ in range(6))
            lines.append(f"    if {word!r} in str(a):\n        b = b {op} {rng.randint(2, 77)}")
        else:
            lines.append(f"    for x in items[{rng.randint(0, 9)}:]:\n        a = a {op} x")
    lines.append(f"    return a {rng.choice(OPS)} b")
    return "\n".join(lines)


def agent(seed: int) -> str:
    rng = random.Random(seed)
    body = "\n\n".join(_function(rng, i) for i in range(FUNCTIONS))
    return f"{body}\n\ndef agent_main(context):\n    return {{'verdict': 'ALLOW'}}\n"


def copy_of(source: str) -> str:
    renamed = source.replace("items", "things").replace("def f", "def g")
    padding = "".join(f"\ndef pad{i}(x):\n    return x + {i}\n" for i in range(200))
    return "# mine\n" + renamed + padding


def submissions(count: int) -> list[Submission]:
    sources: list[str] = []
    for i in range(count):
        if i % 10 == 9:
            sources.append(copy_of(sources[i // 2]))
        else:
            sources.append(agent(i))
    return [Submission(Agent(s.encode(), name=f"sub{i}")) for i, s in enumerate(sources)]


def admission_seconds(count: int, folder: Path) -> tuple[float, int]:
    subs = submissions(count)
    with Store(folder / f"rounds-{count}.db") as store:
        started = time.perf_counter()
        admitted = admit(subs, (Track.SKILLS,), pinned(), arrivals=StoreArrivals(store))
        elapsed = time.perf_counter() - started
    copies = sum("copy screening" in r.get("skills", "") for r in admitted.refused.values())
    return elapsed, copies


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        per: dict[int, float] = {}
        for count in SIZES:
            seconds, copies = admission_seconds(count, Path(scratch))
            per[count] = seconds / count
            print(
                f"submissions={count} seconds={seconds:.2f} ms_per_submission="
                f"{1000 * per[count]:.1f} copies_refused={copies} "
                f"per_submission_ratio={per[count] / per[SIZES[0]]:.2f}"
            )
    print(f"per_submission_ratio_1000={per[1000] / per[SIZES[0]]:.2f}")


if __name__ == "__main__":
    main()
