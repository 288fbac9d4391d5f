"""The local executor's early stop: every rep in flight ends, even one still starting."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from assay.sandbox import default_backend
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.interface import Observation, ResourceLimits, RunCancelled, SealedRequest
from assay.validator.executors.local import _ThreadFlight

LIMITS = ResourceLimits(
    cpu_budget_s=5.0,
    wall_backstop_s=30.0,
    memory_bytes=256 << 20,
    pids=32,
    workspace_bytes=1 << 20,
    result_bytes=1 << 16,
)


@pytest.mark.sandbox
def test_a_stop_kills_a_rep_whose_sandbox_starts_after_it(tmp_path: Path) -> None:
    backend = default_backend()  # the process's one backend, as a round uses it
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "a.txt").write_text("a")
    sleeper = SealedRequest(
        argv=(backend.python, "-I", "-S", "-c", "import time; time.sleep(30)"),
        limits=LIMITS,
        artifact_dir=str(artifact),
    )
    started = threading.Event()

    def late_rep(task: object, backend_: BwrapBackend) -> Observation:
        # The stop lands while this rep's thread runs but before its sandbox does (a rep
        # builds its context and inputs first).
        started.set()
        time.sleep(0.5)
        return backend_.run(sleeper)

    with ThreadPoolExecutor(1) as pool:
        flight = _ThreadFlight(pool, late_rep, backend)  # type: ignore[arg-type]
        handle = flight.submit(None)  # type: ignore[arg-type]
        assert started.wait(30)
        flight.cancel({handle})
        assert handle.done(), "the stop returned with a rep still running"
        with pytest.raises(RunCancelled):  # killed, not slept out, and not anyone's result
            handle.result()


@pytest.mark.sandbox
def test_a_cancelled_running_rep_is_nobodys_result() -> None:
    backend = default_backend()  # the process's one backend, as a round uses it
    sleeper = SealedRequest(
        argv=(backend.python, "-I", "-S", "-c", "import time; time.sleep(30)"), limits=LIMITS
    )
    with ThreadPoolExecutor(1) as pool:
        flight = _ThreadFlight(pool, lambda _task, b: b.run(sleeper), backend)  # type: ignore[arg-type]
        handle = flight.submit(None)  # type: ignore[arg-type]
        time.sleep(0.5)  # most likely running by now; any stage must end the same way
        flight.cancel({handle})
        with pytest.raises(RunCancelled):
            handle.result()
