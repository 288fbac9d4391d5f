"""Round throughput: is orchestration or the store ever the bottleneck?

Measures, in one run on this machine:
  1. the cost of a single rep of a no-op agent that threads the probe, run
     alone through the real sandbox (median of a few);
  2. a whole round of such agents on the local executor with one job per core.

The ideal throughput is cores ÷ single-rep cost; efficiency is the measured
round throughput over that ideal. Target (issue 4): ≥ 0.8.

    .venv/bin/python benchmarks/round_throughput.py [--agents 4] [--singles 9]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import Track
from assay.records.agent import Agent
from assay.runner.rep import RepTask, run_rep
from assay.sandbox import default_backend
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store
from assay.validator.engine import RoundEngine, RoundLedger
from assay.validator.executors.local import LocalExecutor
from assay.validator.planning import make_plan

ROOT = Path(__file__).resolve().parents[1]
NOOP = (ROOT / "agents" / "allow_all.py").read_text()
SECRET = b"benchmark-secret-0123456789abcdef"


def noop_agents(folder: Path, count: int) -> list[Path]:
    # Distinct code (hence distinct hashes) with identical work.
    paths = []
    for i in range(count):
        path = folder / f"noop_{i}.py"
        path.write_text(f"{NOOP}\n# variant {i}\n")
        paths.append(path)
    return paths


def skills_corpus(folder: Path) -> Path:
    root = folder / "corpus"
    shutil.copytree(ROOT / "corpus" / "skills", root / "skills")
    return root


def single_rep_cost(agent: Path, corpus: Path, samples: int) -> float:
    backend = default_backend()
    task_dir = next(p for p in sorted((corpus / "skills").iterdir()) if p.is_dir())
    times = []
    for rep in range(samples):
        task = RepTask(
            agent=Agent(agent.read_bytes()),
            track=Track.SKILLS,
            task_id=task_dir.name,
            artifact_dir=task_dir / "artifact",
            rep=rep,
            round_seed="bench",
        )
        started = time.perf_counter()
        outcome = run_rep(task, backend=backend, spec=pinned(), secret=SECRET)
        times.append(time.perf_counter() - started)
        assert outcome.completed, outcome.detail
    return statistics.median(times)


def round_wall(agents: list[Path], corpus: Path, db: Path, jobs: int) -> tuple[int, float]:
    spec = pinned()
    stored = [Agent.load(a) for a in agents]
    plan = make_plan(
        snapshots=db.parent / "snapshots",
        corpus=NativeCorpus(corpus),
        agents=stored,
        tracks=[Track.SKILLS],
        round_seed="bench",
        validator_id="bench",
        spec=spec,
    )
    store = Store(db)
    store.create_round("bench", plan, stored)
    ledger = RoundLedger(store, "bench", spec)
    reps = len(ledger.pending())
    engine = RoundEngine(ledger, secret=SECRET, executor=LocalExecutor(jobs))
    started = time.perf_counter()
    result = engine.run()
    wall = time.perf_counter() - started
    assert result.status == "completed", result.reason
    return reps, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--singles", type=int, default=9)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        agents = noop_agents(folder, args.agents)
        corpus = skills_corpus(folder)
        single = single_rep_cost(agents[0], corpus, args.singles)
        reps, wall = round_wall(agents, corpus, folder / "bench.db", cores)
    throughput = reps / wall
    ideal = cores / single
    print(f"cores={cores} single_rep_s={single:.3f} reps={reps} round_wall_s={wall:.2f}")
    print(f"reps_per_second={throughput:.2f} ideal_reps_per_second={ideal:.2f}")
    print(f"efficiency={throughput / ideal:.3f}")


if __name__ == "__main__":
    main()
