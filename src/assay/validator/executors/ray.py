"""Runs reps as Ray tasks, on this machine or across a cluster.

Each rep is one Ray task asking for 1 CPU and the sandbox's memory. The worker
starts its own copy of the default sandbox backend, so the sandbox runs on the node
that runs the rep.
Artifacts travel through Ray's object store (a tar, put once per artifact and
verified against its digest after unpacking), so nodes need no shared storage.
Outcomes stream back to the driver, which alone writes the store.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import shutil
import sys
import tarfile
import tempfile
from collections import OrderedDict
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError, RayTaskError

from assay.corpus.interface import artifact_digest
from assay.records.agent import short_hash
from assay.records.outcome import RunOutcome
from assay.runner.rep import RepTask
from assay.sandbox import InfrastructureError, SandboxBackend, default_backend
from assay.sandbox.check import require_sound
from assay.sandbox.owners import owner_alive, owner_tag
from assay.validator.executors.flight import Flight, stream
from assay.validator.executors.interface import Ended, Executor, RepFault, RepRunner

# Re-runs of a rep whose worker process or node died under it. Ray retries only
# such system failures (never an exception raised by the rep), so an agent's own
# crash is judged once, like everywhere else.
WORKER_RETRIES = 3
QUEUED_PER_CPU = 2
# Artifacts are small and put once each; the rest of a node's memory is for sandboxes.
OBJECT_STORE_BYTES = 256 << 20
# Unpacked artifacts a worker keeps for its next reps of them, in the node's temporary
# directory (often memory): per worker, so a node holds this times its workers at most,
# or the one larger artifact a worker is running.
ARTIFACT_CACHE_BYTES = 32 << 20
_CACHE_PREFIX = "assay-artifacts-"

ObjectRef = Any  # ray.ObjectRef, untyped for mypy


class RayExecutor(Executor):
    """Reps as Ray tasks. `address=None` starts a local Ray instance for the run."""

    name = "ray"

    def __init__(
        self, address: str | None = None, jobs: int | None = None, *, retries: int = WORKER_RETRIES
    ) -> None:
        self.address = address
        self.jobs = jobs
        self.retries = retries

    def prepare(self) -> None:
        """Nothing to do on the driver: each worker sweeps and checks its own
        node's sandbox before its first rep, and an unsound node aborts the round."""

    def execute(self, tasks: Iterable[RepTask], runner: RepRunner) -> Generator[Ended, None, None]:
        # Stopping early (Ctrl-C, a fault, the consumer closed us) cancels the reps in
        # flight, inside `stream`, while still connected.
        with self._connected():
            yield from stream(tasks, self._slots(), _RayFlight(runner, self.retries))

    def _slots(self) -> int:
        """In flight: two reps per CPU of the cluster (or per `jobs`), so a worker that
        ends a rep finds the next one already queued instead of waiting a round trip
        to the driver. More would decide the wall cap of reps far from starting."""
        cpus = self.jobs or int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
        return max(1, QUEUED_PER_CPU * cpus)

    @contextmanager
    def _connected(self) -> Iterator[None]:
        # A validator does not report usage to third parties unless its operator says so.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        try:
            if self.address is None:
                ray.init(
                    address="local",  # never join a cluster Ray happens to find on this host
                    num_cpus=self.jobs or os.cpu_count() or 1,
                    include_dashboard=False,
                    object_store_memory=OBJECT_STORE_BYTES,
                    **quiet,
                )
            else:
                ray.init(address=self.address, **quiet)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            where = self.address or "a local instance"
            raise InfrastructureError(f"cannot start or reach Ray ({where}): {exc}") from exc
        try:
            # Ray's driver prints cluster events (a dead worker, its rep retried) to
            # stdout, which belongs to the caller (`--json`): send them to stderr.
            with redirect_stdout(sys.stderr):
                yield
        finally:
            ray.shutdown()


@dataclass(frozen=True)
class ShippedArtifact:
    """An artifact tree in Ray's object store, with the digest it must unpack to."""

    tar: ObjectRef
    digest: str


class _RayFlight(Flight[ObjectRef]):
    def __init__(self, runner: RepRunner, retries: int) -> None:
        self.runner_ref = ray.put(runner)  # the spec and secret travel once, not per rep
        self.remote = _run_shipped.options(
            num_cpus=1,
            memory=runner.spec.sandbox.memory_bytes,
            max_retries=retries,
            retry_exceptions=False,
        )
        self.retries = retries
        self.shipped: dict[Path, ShippedArtifact] = {}
        self.in_flight: dict[ObjectRef, RepTask] = {}

    def submit(self, task: RepTask) -> ObjectRef:
        artifact = self._ship(task.artifact_dir)
        ref = self.remote.remote(task, self.runner_ref, artifact.tar, artifact.digest)
        self.in_flight[ref] = task
        return ref

    def wait_any(self, running: set[ObjectRef]) -> tuple[set[ObjectRef], set[ObjectRef]]:
        done, rest = ray.wait(list(running), num_returns=1)
        return set(done), set(rest)

    def result(self, handle: ObjectRef) -> Ended:
        task = self.in_flight.pop(handle)
        try:
            outcome = ray.get(handle)
        except RayTaskError as exc:
            # The worker raised outside the rep's own run (an unsound sandbox on that
            # node, a shipped artifact that does not unpack to its digest): re-raise the
            # original so the round abstains on it. A fault of the rep's own sandbox
            # comes back as a `RepFault`, as with the local executor.
            raise exc.cause if exc.cause is not None else InfrastructureError(str(exc)) from exc
        except RayError as exc:
            raise InfrastructureError(
                f"{_describe(task)} lost its worker {self.retries + 1} times: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        assert isinstance(outcome, RunOutcome | RepFault)
        return outcome

    def cancel(self, handles: set[ObjectRef]) -> None:
        for handle in handles:
            self.in_flight.pop(handle, None)
            ray.cancel(handle, force=True)  # kills the worker, and its sandbox with it

    def _ship(self, root: Path) -> ShippedArtifact:
        if root not in self.shipped:
            self.shipped[root] = ShippedArtifact(ray.put(pack(root)), artifact_digest(root))
        return self.shipped[root]


def _describe(task: RepTask) -> str:
    agent = short_hash(task.agent.agent_hash)
    return f"rep {task.rep} of {agent} on {task.track.value}/{task.task_id}"


def pack(root: Path) -> bytes:
    """The artifact tree as an uncompressed tar (symlinks kept as links, never followed)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(root, arcname=".", recursive=True)
    return buffer.getvalue()


def unpack(data: bytes, into: Path, digest: str) -> Path:
    """Unpack a shipped artifact under `into`; a tree that does not hash to `digest`
    is an infrastructure fault (the validator abstains), never the agent's."""
    root = into / "artifact"
    root.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(root, filter="tar")  # refuses members outside `root`
    if artifact_digest(root) != digest:
        raise InfrastructureError("shipped artifact does not match its planned digest")
    return root


@functools.cache
def _worker_backend() -> SandboxBackend:
    """This worker process's sandbox, checked sound once: an unsound node makes the
    round abstain. Ray ends idle workers without running their exit hooks: the
    sandbox a worker started ahead of its next rep dies with it, and what it left
    (directories, groups, a tracer stopped before it attached) is swept by the
    next worker (sweeps on one node are serialised)."""
    backend = default_backend()
    backend.sweep_stale()
    require_sound(backend)
    return backend


class UnpackedArtifacts:
    """A worker's unpacked artifacts by digest, kept for its later reps of the same one.

    Sharing a tree between reps is safe because the sandbox copies it in read-only
    (as the local executor shares the round's snapshot). Unpacking and hashing
    again for every rep cost a worker ~2.4 ms of a ~37 ms rep, and more
    for a larger artifact.
    Ray ends idle workers without their exit hooks, so the folder is named after
    its owner process and the first use in any worker removes dead owners' folders.
    """

    def __init__(self, parent: Path, max_bytes: int = ARTIFACT_CACHE_BYTES) -> None:
        self.parent = parent
        self.max_bytes = max_bytes
        self.trees: OrderedDict[str, tuple[Path, int]] = OrderedDict()
        self.used = 0
        self._root: Path | None = None

    def tree(self, tar: bytes, digest: str) -> Path:
        """The artifact unpacked and verified against `digest` (once per worker)."""
        if digest in self.trees:
            self.trees.move_to_end(digest)
            return self.trees[digest][0]
        self._make_room(len(tar))
        into = Path(tempfile.mkdtemp(dir=self._folder()))
        try:
            root = unpack(tar, into, digest)
        except BaseException:
            shutil.rmtree(into, ignore_errors=True)
            raise
        self.trees[digest] = (root, len(tar))  # an uncompressed tar: about the tree's size
        self.used += len(tar)
        return root

    def _make_room(self, size: int) -> None:
        while self.trees and self.used + size > self.max_bytes:
            _, (root, held) = self.trees.popitem(last=False)
            shutil.rmtree(root.parent, ignore_errors=True)
            self.used -= held

    def _folder(self) -> Path:
        if self._root is None:
            for stale in self.parent.glob(f"{_CACHE_PREFIX}*"):
                owner = stale.name.removeprefix(_CACHE_PREFIX).partition(".")[0]
                if not owner_alive(owner):
                    shutil.rmtree(stale, ignore_errors=True)  # never follows a symlink
            # Made new and ours alone (mkdtemp), never a folder someone else put
            # there first: later reps trust what is in it without hashing it again.
            made = tempfile.mkdtemp(prefix=f"{_CACHE_PREFIX}{owner_tag()}.", dir=self.parent)
            self._root = Path(made)
        return self._root


@functools.cache
def _worker_artifacts() -> UnpackedArtifacts:
    return UnpackedArtifacts(Path(tempfile.gettempdir()))


@ray.remote
def _run_shipped(task: RepTask, runner: RepRunner, tar: bytes, digest: str) -> Ended:
    artifact = _worker_artifacts().tree(tar, digest)
    return runner(replace(task, artifact_dir=artifact), _worker_backend())
