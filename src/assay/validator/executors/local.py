"""Runs reps on this machine, one sandbox per busy core."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable
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

    def execute(
        self, tasks: Iterable[RepTask], runner: RepRunner
    ) -> Generator[RunOutcome, None, None]:
        pending = iter(tasks)
        pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="assay-rep")
        running: set[Future[RunOutcome]] = set()
        try:
            while True:
                while len(running) < self.jobs and (task := next(pending, None)) is not None:
                    running.add(pool.submit(runner, task, self.backend))
                if not running:
                    return
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        except BaseException:
            # Stopping early (Ctrl-C, a fault, the consumer gave up): kill what runs
            # rather than wait out its budget; nothing more is yielded.
            self.backend.cancel_all()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
