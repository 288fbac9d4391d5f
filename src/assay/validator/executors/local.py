"""Runs reps on this machine, one sandbox per busy core."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from assay.runner.rep import RepTask
from assay.sandbox import SandboxBackend, default_backend
from assay.sandbox.check import require_sound
from assay.validator.executors.flight import Flight, stream
from assay.validator.executors.interface import Ended, Executor, RepRunner

_RECHECK_S = 0.05


class LocalExecutor(Executor):
    """A thread per slot: the work happens in sandboxed child processes, so
    threads only wait on them and the GIL is no bottleneck."""

    name = "local"

    def __init__(self, jobs: int | None = None, backend: SandboxBackend | None = None) -> None:
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.backend = backend or default_backend()

    def prepare(self) -> None:
        self.backend.sweep_stale()
        require_sound(self.backend)

    def execute(self, tasks: Iterable[RepTask], runner: RepRunner) -> Generator[Ended, None, None]:
        with ThreadPoolExecutor(self.jobs, thread_name_prefix="assay-rep") as pool:
            yield from stream(tasks, self.jobs, _ThreadFlight(pool, runner, self.backend))


class _ThreadFlight(Flight[Future[Ended]]):
    def __init__(self, pool: ThreadPoolExecutor, runner: RepRunner, backend: SandboxBackend):
        self.pool, self.runner, self.backend = pool, runner, backend

    def submit(self, task: RepTask) -> Future[Ended]:
        return self.pool.submit(self.runner, task, self.backend)

    def wait_any(
        self, running: set[Future[Ended]]
    ) -> tuple[set[Future[Ended]], set[Future[Ended]]]:
        done, pending = wait(running, return_when=FIRST_COMPLETED)
        return done, pending

    def result(self, handle: Future[Ended]) -> Ended:
        return handle.result()

    def cancel(self, handles: set[Future[Ended]]) -> None:
        # Stopping early (Ctrl-C, a fault, the consumer gave up): kill what runs rather
        # than wait out its budget, so the pool's shutdown returns promptly. A rep whose
        # thread had started but whose sandbox was not yet running escapes one kill, so
        # kill again until every rep has ended.
        for future in handles:
            future.cancel()
        while not all(f.done() for f in handles):
            self.backend.cancel_all()
            wait(handles, timeout=_RECHECK_S)
