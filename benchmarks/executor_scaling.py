"""Executor scaling: the same round on the local executor and on Ray, on this machine.

Both rounds run in this process through the real sandbox, one after the other:
the keyword and allow_all agents over every task of the bundled corpus. Ray runs
on a one-node cluster started before the clock starts, as an operator's cluster
is up before a round; the cost of a throwaway local instance (`--executor ray`
without `--address`) is printed separately. Ray's fixed cost per round (driver
connection, fresh workers checking their sandbox) is about a second, so the round
must be long enough for per-rep throughput to show. Target (issue 11):
ray_over_local ≤ 1.1.

    .venv/bin/python benchmarks/executor_scaling.py [--port 6399]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

# Ray reads these when it is imported; the head below is started with the same
# (a loopback-only cluster: no token to distribute; docs/multi-node.md uses tokens).
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
os.environ.update(RAY_ENV)

from assay.corpus.native import NativeCorpus  # noqa: E402
from assay.mechanism.spec import Track  # noqa: E402
from assay.records.agent import Agent  # noqa: E402
from assay.schema.mechanism_file import pinned  # noqa: E402
from assay.store.sqlite import Store  # noqa: E402
from assay.validator.engine import RoundEngine, RoundLedger  # noqa: E402
from assay.validator.executors.interface import Executor  # noqa: E402
from assay.validator.executors.local import LocalExecutor  # noqa: E402
from assay.validator.executors.ray import RayExecutor  # noqa: E402
from assay.validator.planning import make_plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AGENTS = [ROOT / "agents" / "keyword.py", ROOT / "agents" / "allow_all.py"]
SECRET = b"benchmark-secret-0123456789abcdef"


@contextmanager
def ray_head(port: int, cpus: int) -> Iterator[str]:
    """A one-node Ray cluster in its own process group, killed as a whole afterwards."""
    ray_cli = Path(sys.executable).with_name("ray")
    argv = [str(ray_cli), "start", "--head", f"--port={port}", f"--num-cpus={cpus}"]
    head = subprocess.Popen(
        [*argv, "--include-dashboard=false", f"--object-store-memory={256 << 20}"],
        env={**os.environ, **RAY_ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        if head.wait(timeout=120) != 0:
            raise RuntimeError("ray start --head failed")
        yield f"127.0.0.1:{port}"
    finally:
        # A head that failed to start may have left nothing behind in its group.
        with suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)


def round_wall(executor: Executor, corpus: Path, db: Path) -> float:
    spec = pinned()
    agents = [Agent.load(a) for a in AGENTS]
    plan = make_plan(
        snapshots=db.with_name(f"{db.stem}.artifacts"),  # one snapshot folder per round
        corpus=NativeCorpus(corpus),
        agents=agents,
        tracks=list(Track),
        draw_all=True,
        round_seed="bench",
        validator_id="bench",
        spec=spec,
    )
    store = Store(db)
    store.create_round("bench", plan, agents)
    engine = RoundEngine(RoundLedger(store, "bench", spec), secret=SECRET, executor=executor)
    started = time.perf_counter()
    result = engine.run()
    wall = time.perf_counter() - started
    assert result.status == "completed", result.reason
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=6399)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus"
        shutil.copytree(ROOT / "corpus", corpus)
        local = round_wall(LocalExecutor(cores), corpus, folder / "local.db")
        throwaway = round_wall(RayExecutor(None, cores), corpus, folder / "instance.db")
        with ray_head(args.port, cores) as address:
            ray = round_wall(RayExecutor(address), corpus, folder / "ray.db")
    print(f"cores={cores} local_s={local:.2f} ray_cluster_s={ray:.2f}")
    print(f"ray_local_instance_s={throwaway:.2f} (includes starting and stopping Ray)")
    print(f"ray_over_local={ray / local:.3f}")


if __name__ == "__main__":
    main()
