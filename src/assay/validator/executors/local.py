"""Runs reps on this machine, one sandbox per busy core."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from assay.runner.outcome import RunOutcome
from assay.runner.rep import RepTask
from assay.sandbox import SandboxBackend, default_backend
from assay.validator.executors.interface import Executor, RepRunner


class LocalExecutor(Executor):
    """A thread per slot: the work happens in sandboxed child processes, so
    threads only wait on them and the GIL is no bottleneck."""

    name = "local"

    def __init__(self, jobs: int | None = None, backend: SandboxBackend | None = None) -> None:
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.backend = backend or default_backend()

    def execute(self, tasks: Iterable[RepTask], runner: RepRunner) -> Iterator[RunOutcome]:
        pending = iter(tasks)
        with ThreadPoolExecutor(self.jobs, thread_name_prefix="assay-rep") as pool:
            running: set[Future[RunOutcome]] = set()
            try:
                while True:
                    while len(running) < self.jobs:
                        task = next(pending, None)
                        if task is None:
                            break
                        running.add(pool.submit(runner, task, self.backend))
                    if not running:
                        return
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        yield future.result()
            finally:
                for future in running:
                    future.cancel()
