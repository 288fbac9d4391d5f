"""The default backend: bubblewrap namespaces + cgroup limits + strace, no daemon.

Process chain of one run (each exec keeps the pid):

    setpriv --pdeathsig: exec
    strace (root, validator's cgroup, dies with the validator)
      └─ sh (already the unprivileged sandbox user, via strace -u): joins the
         run's cgroups, then exec
         bwrap: namespaces, minimal read-only root and mounts, then waits on
         --block-fd; once released: seccomp, then the command

Those parent-death signals leave a window at each link, so a validator killed at
the wrong moment could still leave a sandbox running: its watchdog
(`watchdog.py`) kills and removes whatever the validator left once it is gone.

strace stays outside the run's cgroups (killing the group must leave it alive
to finish the trace), but its CPU time, which the traced program causes with
every traced call, is added to the run's: the validator polls both counters
(every few milliseconds near the budget, less often far from it) and kills the
whole tree once their sum passes the budget. strace writes into its own
size-capped tmpfs; a run whose trace outgrows the request's cap is ended like
any other limit (`TRACE_CAP`).

A sandbox is started before its request is known and claimed by the request:
inputs and a copy of the artifact are written into directories bubblewrap
already binds, and the release starts the command.
So after each run a background thread removes it and starts the next ones
(`prestart`): one more than the runs seen going on at once, so a run takes one
that had a whole run's time to start. That takes strace's and bubblewrap's
start-up (~12 ms on a quiet machine) off the next rep's path. A started sandbox
has run nothing of the agent's; it is only ever claimed by a request of the same
shape (command and limits).

Nothing inside names the host or the task. Every directory the sandbox sees
comes from a tmpfs mounted by the validator (a planted home is an image of its own
over a loop device: `home.py`), so the mount table inside shows only paths within
those (a bind of a host directory would show its host path, which
names the corpus task); bubblewrap reads its own arguments, full of run paths,
from a descriptor rather than its command line; and the launcher runs in /
with a fixed environment, which is all bubblewrap (pid 1 inside) inherits.

What the sandbox can write is one tmpfs of the workspace's size, shared by
/task/workspace, /tmp and /dev/shm; the root and /dev, bubblewrap's own tmpfs
mounts that take no size, are made read-only.

A lived-in sandbox (one with a planted home: a detonation's) looks like a machine
rather than like this one: no /task (the workspace is at /workspaces, the artifact a
copy in it, the inputs a directory of /tmp the command removes), a root tmpfs of its
own (bubblewrap's shows as "/newroot" in /proc/self/mountinfo) with a machine's other
directories (/root, /var, /run, /opt ...), the agents' runtime directory left out of
/usr/local/lib, and pid 1 an init that reads as a machine's (`init.py`, under
`--as-pid-1`), which starts the command; without it, pid 1 was bubblewrap, whose
command line named the command.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import os
import pwd
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import FrameType

from assay.sandbox.bwrap import ebpf, hostfs, tracer
from assay.sandbox.bwrap.cgroups import (
    Cgroup,
    CgroupDriver,
    IdentityGroup,
    detect_driver,
    identity_group,
    remove_identity_groups,
)
from assay.sandbox.bwrap.home import HomeWatch, plant
from assay.sandbox.bwrap.netsink import NetSink
from assay.sandbox.bwrap.seccomp import compiled_filter
from assay.sandbox.bwrap.watchdog import Watchdog
from assay.sandbox.check import run_checks
from assay.sandbox.copyout import copy_out
from assay.sandbox.interface import (
    LIVED_IN_WORKSPACE_DIR,
    RESULT_FD_ENV,
    SANDBOX_ARTIFACT_DIR,
    SANDBOX_INPUT_DIR,
    SANDBOX_TASK_DIR,
    SANDBOX_WORKSPACE_DIR,
    CapturedStream,
    CheckResult,
    ComparedTree,
    InfrastructureError,
    LimitHit,
    NetworkLog,
    Observation,
    ObserverKind,
    RecordedTree,
    ResourceLimits,
    RunCancelled,
    SandboxBackend,
    SealedRequest,
    TraceSet,
    TraceSummary,
)
from assay.sandbox.runtime import AGENT_RUNTIME_DIR, tree_digest
from assay.sandbox.trees import record_tree

SANDBOX_USER = "nobody"  # the host user the sandbox runs as; shown as SANDBOX_INNER_UID inside
SANDBOX_UID = pwd.getpwnam(SANDBOX_USER).pw_uid
SANDBOX_GID = pwd.getpwnam(SANDBOX_USER).pw_gid
SANDBOX_INNER_UID = 1000
# The gate is polled as often as the CPU budget or the wall backstop could be passed:
# every POLL_INTERVAL_S near one, less often while far from both (a run could not pass
# the budget sooner even if it burned every CPU), and never less often than every
# POLL_MAX_S. The other limits hold without the poll (the kernel enforces memory and
# pids; the trace tmpfs is sized to the cap), which only decides how soon a run past
# them is ended. Each wake costs the validator ~0.4 ms of CPU on a small VM: a 3 s rep
# cost it 65 ms when a trace-rate term and POLL_MAX_S = 0.05 woke it every ~30 ms, 25 ms now.
POLL_INTERVAL_S = 0.004
POLL_MAX_S = 0.2
# Once output is drained the validator waits on the tree's exit alone for this long
# before watching the pipes again, so a run writing a byte at a time costs it one wake
# per OUTPUT_BATCH_S rather than one per write (a 1 s run writing a byte every 0.2 ms
# cost it ~120 ms of CPU, 7.8 times a quiet run's; ~52 ms, ~3 times, waking every 5 ms;
# ~30 ms every 20 ms: benchmarks/tracer_abuse.py). The pipes, widened to PIPE_BYTES,
# hold what is written meanwhile; a writer that fills one waits at most that long.
OUTPUT_BATCH_S = 0.02
PIPE_BYTES = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size
_READ_BYTES = 1 << 16
_CPUS = os.cpu_count() or 1
_TRACE_SLACK = 4 << 20  # what the trace tmpfs holds past the cap (see _prepare)
_PAGE = 4096  # every trace file holds at least one page of its tmpfs
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ROOT_BYTES = 1 << 20  # a lived-in root holds only mount points and links
# The agents' runtime's own directory (/usr/local/lib/assay), whose name names the
# validator: a lived-in sandbox's /usr/local/lib shows without it.
_RUNTIME_HOME = Path(AGENT_RUNTIME_DIR).parent
_ETC_FILES = {
    "passwd": f"agent:x:{SANDBOX_INNER_UID}:{SANDBOX_INNER_UID}:agent:/tmp:/usr/sbin/nologin\n",
    "group": f"agent:x:{SANDBOX_INNER_UID}:\n",
    "hosts": "127.0.0.1 localhost sandbox\n::1 localhost\n",
    "resolv.conf": "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
}


class _Interrupted(BaseException):
    """SIGTERM arrived mid-run; raised so cleanup runs before the validator exits."""


@contextlib.contextmanager
def _terminate_as_exception() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    except _Interrupted:
        raise SystemExit(128 + signal.SIGTERM) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclass
class _Capture:
    """A pipe read end drained into a capped buffer; bytes past the cap are counted."""

    fd: int
    cap: int
    chunks: list[bytes] = field(default_factory=list)
    kept: int = 0
    total: int = 0

    def drain(self) -> bool:
        """Read all that is there; False once the writer side is closed."""
        while True:
            try:
                chunk = os.read(self.fd, _READ_BYTES)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            self.total += len(chunk)
            room = self.cap - self.kept
            if room > 0:
                self.chunks.append(chunk[:room])
                self.kept += min(room, len(chunk))
            if len(chunk) < _READ_BYTES:
                return True  # the pipe is empty: spare the read that would say so

    def result(self) -> CapturedStream:
        return CapturedStream(b"".join(self.chunks), self.total)


class _ProcessClock:
    """CPU time of one process (not its children), from its schedstat, kept open.

    Reads after the process is gone return the last value seen.
    """

    def __init__(self, pid: int) -> None:
        self._fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        self._last = 0.0

    def cpu_s(self) -> float:
        with contextlib.suppress(OSError, ValueError, IndexError):
            self._last = int(os.pread(self._fd, 128, 0).split()[0]) / 1e9
        return self._last

    def close(self) -> None:
        os.close(self._fd)


@dataclass(frozen=True)
class _Shape:
    """What a sandbox is fixed to when it starts, before its request is known."""

    argv: tuple[str, ...]
    memory_bytes: int
    pids: int
    workspace_bytes: int
    trace: TraceSet
    trace_bytes: int
    trace_files: int
    hostname: str
    home_user: str | None  # /home and its user's passwd entry are bound at start
    boot_time_shifted: bool  # /proc/stat is bound at start, its content written at claim
    observer: ObserverKind
    network_sink: bool  # the sink and its namespace are started with the sandbox

    @property
    def lived_in(self) -> bool:
        """A machine that looks lived-in (a detonation's): a planted home, an init as
        pid 1, a root of its own, no /task."""
        return self.home_user is not None

    @classmethod
    def of(cls, request: SealedRequest) -> _Shape:
        limits = request.limits
        return cls(
            request.argv,
            limits.memory_bytes,
            limits.pids,
            limits.workspace_bytes,
            request.trace,
            limits.trace_bytes,
            limits.trace_files,
            request.hostname,
            request.home.user if request.home else None,
            request.boot_time_shift_s != 0,
            request.observer,
            request.network_sink,
        )


@dataclass(eq=False)  # identity: runs in flight are kept in a set
class _Run:
    """One sandbox: started up to bubblewrap's --block-fd, then claimed by one request.

    Holds everything it set up, so cleanup can undo exactly that.
    """

    shape: _Shape
    run_dir: Path
    cgroup: Cgroup | None = None
    process: subprocess.Popen[bytes] | None = None
    launcher: tuple[str, ...] = ()  # what strace executes: sh, which execs bwrap
    fds: list[int] = field(default_factory=list)  # closed at cleanup
    streams: tuple[int, int, int] = (-1, -1, -1)  # read ends: stdout, stderr, result
    release_fd: int = -1  # writing here lets bubblewrap execute the command
    tracer_clock: _ProcessClock | None = None
    watch: ebpf.Watch | None = None  # its part of the eBPF session, when that observes
    identity: IdentityGroup | None = None  # on a v1 host, the cgroup v2 group it is known by
    home_watch: HomeWatch | None = None
    netsink: NetSink | None = None  # the run's network, when it has one
    trees_before: tuple[RecordedTree, ...] = ()  # the request's compare_trees, at its claim
    cancelled: bool = False  # by `cancel_all`: the run ends as `RunCancelled`
    # The tracer traced the command (its exec, or a trace past the cap, which the
    # launcher's few calls never reach), so it had attached the launcher, which joined
    # the run's cgroup before that: killing the group reaches everything it started.
    attached: bool = False

    @property
    def box(self) -> Path:
        """A tmpfs only the validator writes: the inputs and the artifact's copy."""
        return self.run_dir / "box"

    @property
    def inputs(self) -> Path:
        return self.box / "input"

    @property
    def artifact(self) -> Path:
        return self.box / "artifact"

    @property
    def scratch(self) -> Path:
        """The one size-capped tmpfs the sandbox writes, under three names."""
        return self.run_dir / "scratch"

    @property
    def workspace(self) -> Path:
        return self.scratch / "workspace"

    @property
    def tmp(self) -> Path:
        return self.scratch / "tmp"

    @property
    def var_tmp(self) -> Path:
        """A lived-in sandbox's /var/tmp, on the same tmpfs (a machine's is writable)."""
        return self.scratch / "vartmp"

    @property
    def shm(self) -> Path:
        return self.scratch / "shm"

    @property
    def homes(self) -> Path:
        """The host side of /home, on the sandbox's writable tmpfs."""
        return self.scratch / "home"

    @property
    def home_stage(self) -> Path:
        """Where the validator writes a home before `cp` plants it (see `plant`)."""
        return self.box / "home"

    @property
    def root(self) -> Path:
        """A lived-in sandbox's root: a tmpfs of its own, bound whole as /, so that
        /proc/self/mountinfo names no directory of bubblewrap's (its own root is
        "/newroot" of a tmpfs)."""
        return self.run_dir / "root"

    @property
    def trace_prefix(self) -> Path:
        return self.run_dir / "trace" / "t"

    def trace_used(self) -> tuple[int, int]:
        """Bytes and files the tracer has written so far."""
        stat = os.statvfs(self.trace_prefix.parent)
        return (stat.f_blocks - stat.f_bfree) * stat.f_frsize, stat.f_files - stat.f_ffree

    def cpu_s(self) -> float:
        """CPU time of the sandboxed tree and of its tracer."""
        assert self.cgroup is not None and self.tracer_clock is not None
        return self.cgroup.cpu_s() + self.tracer_clock.cpu_s()


class BwrapBackend(SandboxBackend):
    name = "bwrap"

    def __init__(
        self,
        *,
        python: str = "/usr/bin/python3",
        runtime_base: Path | None = None,
        cgroups: CgroupDriver | None = None,
        prestart: bool = True,
    ) -> None:
        """`prestart`: start sandboxes (strace, launcher, bubblewrap's namespaces and
        mounts) ahead of their requests, as the module's docstring tells."""
        self._python = python
        self._tree = hostfs.RuntimeTree(runtime_base or hostfs.default_runtime_base())
        self._cgroups = cgroups
        self._etc: dict[bool, Path] = {}  # by whether it is a lived-in machine's
        self._cover: Path | None = None  # a lived-in machine's /usr/local/lib (`_cover_dir`)
        self._prestart = prestart
        self._warm: list[_Run] = []  # started, oldest first
        self._most_at_once = 1  # runs seen going on at once
        self._lock = threading.Lock()
        self._janitor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-sandbox")
        self._pending: list[Future[None]] = []
        self._in_flight: set[_Run] = set()
        self._ebpf: ebpf.Session | None = None  # started by the first eBPF-observed run
        self._ebpf_lock = threading.Lock()
        self._watchdog = Watchdog(self._tree.base)
        atexit.register(self.release)

    @property
    def python(self) -> str:
        return self._python

    @property
    def python_path(self) -> tuple[str, ...]:
        return (AGENT_RUNTIME_DIR,)

    @property
    def private_paths(self) -> tuple[str, ...]:
        return (str(self._tree.base),)

    @functools.cached_property
    def digest(self) -> str:
        parts = [self.name, _tool_version("bwrap"), _tool_version("strace"), self._python]
        parts.append(hashlib.sha256(compiled_filter()).hexdigest())
        parts.append(tree_digest(Path(AGENT_RUNTIME_DIR)))
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def sweep_stale(self) -> int:
        """Remove cgroups, mounts and directories left by validators that died."""
        with hostfs.host_lock(self._tree.base):
            swept = self._driver().sweep_stale() + self._tree.sweep_stale()
            return swept + remove_identity_groups(stale=True)

    def _driver(self) -> CgroupDriver:
        if self._cgroups is None:
            self._cgroups = detect_driver()
        return self._cgroups

    def _etc_dir(self, lived_in: bool = False) -> Path:
        with self._lock:
            return self._etc.get(lived_in) or self._make_etc(lived_in)

    def _make_etc(self, lived_in: bool) -> Path:
        etc = self._tree.ensure() / ("etc-home" if lived_in else "etc")
        etc.mkdir(mode=0o755, exist_ok=True)
        if not os.path.ismount(etc):  # another backend of this process may have made it
            hostfs.mount_tmpfs(etc, None, 0, 0, mode=0o755)  # bound whole: no host path inside
        for name, text in _ETC_FILES.items():
            (etc / name).write_text(text)
        if lived_in:
            _lived_in_etc(etc)
        # The dynamic loader's cache is public, and without it Debian's
        # multiarch libraries are found only by the slow fallback search.
        with contextlib.suppress(OSError):
            shutil.copyfile("/etc/ld.so.cache", etc / "ld.so.cache")
        # Every host has a time zone; without one, date-formatting runtimes (Node, npm)
        # retry the open again and again, which reads as a timing probe.
        with contextlib.suppress(OSError):
            shutil.copyfile("/etc/localtime", etc / "localtime")
        self._etc[lived_in] = etc
        return etc

    def _cover_dir(self) -> Path:
        """What a lived-in sandbox shows as the agents' runtime's directory: a tmpfs of
        the validator's, made once, with a mount point for each of the host's entries
        but the runtime's (whose name names the validator), each bound back over it."""
        with self._lock:
            if self._cover is None:
                self._cover = _make_cover(self._tree.ensure() / "cover", _RUNTIME_HOME)
            return self._cover

    def check(self, *, ebpf: bool = False) -> tuple[CheckResult, ...]:
        return run_checks(self, ebpf=ebpf)

    def run(self, request: SealedRequest) -> Observation:
        for name in (*request.copy_out, *(item.name for item in request.inputs)):
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"file names must be one path component, got {name!r}")
        shape = _Shape.of(request)
        with _terminate_as_exception():
            self._settle()
            run = self._take_warm(shape) or self._start(shape)
            try:
                observation = self._claim_tracked(run, request)
            except BaseException:
                _cleanup(run)
                raise
        # Removing this run and starting the next happen off the caller's path.
        recycling = self._janitor.submit(self._recycle, run, shape)
        with self._lock:
            self._pending.append(recycling)
        return observation

    def cancel_all(self) -> None:
        with self._lock:
            in_flight = list(self._in_flight)
        for run in in_flight:
            run.cancelled = True
            if run.cgroup is not None:
                with contextlib.suppress(OSError, InfrastructureError):
                    run.cgroup.kill_all()

    def _claim_tracked(self, run: _Run, request: SealedRequest) -> Observation:
        with self._lock:
            self._in_flight.add(run)
            self._most_at_once = max(self._most_at_once, len(self._in_flight))
        try:
            # Killed at any stage, a run may look like anything (even a sandbox that
            # never started its command): the flag, not the observation, says why.
            try:
                observation = self._claim(run, request)
            except InfrastructureError as exc:
                if run.cancelled:
                    raise RunCancelled("the run was cancelled") from exc
                raise
            if run.cancelled:
                raise RunCancelled("the run was cancelled")
            return observation
        finally:
            with self._lock:
                self._in_flight.discard(run)

    def release(self) -> None:
        """Stop the started sandboxes and remove this validator's directory and cgroups.

        Registered to run at exit; what a killed validator leaves, its watchdog removes
        (and failing that, the next validator's sweep).
        The directory and cgroups are per process: call it only when no other backend
        of this process is running (`assay.sandbox.default_backend` shares one).
        """
        try:
            self._settle()
        finally:
            with self._lock:
                warm, self._warm = self._warm, []
            for started in warm:
                _cleanup(started)
            self._stop_ebpf()
            if self._cgroups is not None:
                self._cgroups.release()
            remove_identity_groups(stale=False)
            self._tree.release()
            self._etc = {}
            self._cover = None
            self._watchdog.stand_down()  # only once nothing of ours is left

    def _stop_ebpf(self) -> None:
        with self._ebpf_lock:
            session, self._ebpf = self._ebpf, None
        if session is not None:
            session.stop()

    def _settle(self) -> None:
        """Wait for the background cleanup; a cleanup that failed fails the caller."""
        with self._lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def _recycle(self, done: _Run, shape: _Shape) -> None:
        _cleanup(done)
        # An eBPF-observed shape, or one with a network sink, is a detonation profile's,
        # whose hostname is drawn per detonation: a sandbox started ahead for it would
        # seldom be claimed (only by a later profile of the same shape in the same
        # detonation), and its sink (a namespace and a process) would be started for
        # nothing.
        detonation = shape.observer is ObserverKind.EBPF or shape.network_sink
        ahead = self._prestart and not detonation
        while ahead and self._refill(shape):
            pass

    def _take_warm(self, shape: _Shape) -> _Run | None:
        """The oldest started sandbox that fits `shape`; a dead one is cleaned up."""
        with self._lock:
            dead = [r for r in self._warm if r.process is None or r.process.poll() is not None]
            fits = next((r for r in self._warm if r.shape == shape and r not in dead), None)
            self._warm = [r for r in self._warm if r is not fits and r not in dead]
        for run in dead:
            _cleanup(run)
        return fits

    def _refill(self, shape: _Shape) -> bool:
        """Start one more sandbox if fewer than the pool's size are started (the oldest
        beyond it, of another shape, makes room); whether there may be room for more."""
        with self._lock:
            wanted = self._most_at_once + 1
            if sum(r.shape == shape for r in self._warm) >= wanted:
                return False
        try:
            fresh = self._start(shape)
        except (InfrastructureError, OSError):
            return False  # the next run starts cold and reports the fault itself
        with self._lock:
            self._warm.append(fresh)
            spares, self._warm = self._warm[:-wanted], self._warm[-wanted:]
        for spare in spares:
            _cleanup(spare)
        return True

    def _start(self, shape: _Shape) -> _Run:
        """Start strace, the launcher and bubblewrap up to its --block-fd."""
        with self._lock:
            self._watchdog.ensure()
        run = _Run(shape, self._tree.new_run_dir())
        try:
            self._prepare(run)
            self._spawn(run)
        except BaseException:
            _cleanup(run)
            raise
        return run

    def _prepare(self, run: _Run) -> None:
        run.trace_prefix.parent.mkdir(mode=0o700)
        # Room for every file's partly used last page, and a little past the cap,
        # so the poll sees it passed before strace finds the disk full.
        shape = run.shape
        size = shape.trace_bytes + shape.trace_files * _PAGE + _TRACE_SLACK
        hostfs.mount_tmpfs(run.trace_prefix.parent, size, 0, 0, inodes=shape.trace_files + 16)
        run.box.mkdir(mode=0o700)
        hostfs.mount_tmpfs(run.box, None, 0, 0, mode=0o755)
        for place in (run.inputs, run.artifact):
            place.mkdir()
            os.chmod(place, 0o755)  # whatever the validator's umask
        run.scratch.mkdir(mode=0o700)
        hostfs.mount_tmpfs(run.scratch, run.shape.workspace_bytes, SANDBOX_UID, SANDBOX_GID)
        places = [(run.workspace, 0o700), (run.tmp, 0o1777), (run.shm, 0o1777)]
        places += [(run.var_tmp, 0o1777)] if shape.lived_in else []
        for place, mode in places:
            place.mkdir()
            os.chmod(place, mode)
            os.chown(place, SANDBOX_UID, SANDBOX_GID)
        if shape.home_user is not None:
            _prepare_home(run, shape.home_user, shape.hostname)
        if shape.lived_in:
            run.root.mkdir(mode=0o700)
            # The sandbox's user makes the mount points in it, before it is made read-only.
            hostfs.mount_tmpfs(run.root, _ROOT_BYTES, SANDBOX_UID, SANDBOX_GID, mode=0o755)
        if shape.boot_time_shifted:
            (run.box / "stat").touch()
        if shape.network_sink:
            run.netsink = NetSink(self._python, SANDBOX_UID, SANDBOX_GID)
        observed = shape.observer is ObserverKind.EBPF
        run.cgroup = self._driver().create(shape.memory_bytes, shape.pids, observed=observed)
        run.cgroup.permit_join(SANDBOX_UID)
        if observed:
            self._observe_from_below(run)

    def _observe_from_below(self, run: _Run) -> None:
        """Have the backend's eBPF session watch the run's cgroup v2 group (made under
        the one parent of every observed run's), starting the session if none runs."""
        assert run.cgroup is not None
        if self._driver().version == "v2":
            group = run.cgroup.join_files[0].parent
        else:
            run.identity = identity_group()
            group = run.identity.path
        try:
            cgroup_id, parent_id = group.stat().st_ino, group.parent.stat().st_ino
        except OSError as exc:
            raise InfrastructureError(f"cannot read the run's cgroup v2 id: {exc}") from exc
        run.watch = self._ebpf_session(parent_id).watch(
            cgroup_id, run.trace_prefix.with_name("events")
        )

    def _ebpf_session(self, parent_id: int) -> ebpf.Session:
        """The running session on `parent_id` (perhaps still starting); one that died,
        or watches another parent (its groups were removed), is replaced."""
        with self._ebpf_lock:
            session = self._ebpf
            if session is not None and session.alive and session.parent_id == parent_id:
                return session
            self._ebpf = None
            if session is not None:
                session.stop()  # the runs it watched fail at their drain
            self._ebpf = ebpf.Session(parent_id, self._tree.ensure())
            return self._ebpf

    def _spawn(self, run: _Run) -> None:
        seccomp_fd = _memfd(run, "assay-seccomp", compiled_filter())
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        block_r, block_w = os.pipe()
        run.fds += [result_r, out_r, err_r, block_w]
        run.streams = (out_r, err_r, result_r)
        for stream in run.streams:
            _widen(stream)
        run.release_fd = block_w
        # bubblewrap reads (and closes) its options from here: on its command line,
        # which the sandbox reads as /proc/1/cmdline, they would show the run paths.
        options = self._bwrap_options(run, seccomp_fd, result_w, block_r)
        args_fd = _memfd(run, "assay-bwrap-args", b"".join(o.encode() + b"\0" for o in options))
        bwrap_argv = ["bwrap", "--args", str(args_fd), "--", *self._command(run.shape)]
        passed = [seccomp_fd, args_fd, result_w, block_r]
        if run.netsink is not None:
            passed.append(run.netsink.netns_fd)
        try:
            run.process = subprocess.Popen(
                self._launcher_argv(run, bwrap_argv),
                stdin=subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                pass_fds=passed,
                start_new_session=True,
                # bubblewrap, pid 1 inside, keeps this environment and working directory
                # (/proc/1/environ, /proc/1/cwd): nothing of the validator's. No LANG:
                # the launcher then loads no locale files (each open is a traced stop).
                cwd="/",
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            )
        except OSError as exc:
            raise InfrastructureError(f"cannot start the sandbox: {exc}") from exc
        finally:
            for fd in (result_w, out_w, err_w, block_r):
                os.close(fd)
        try:
            # An eBPF session's CPU while the run goes on is billed to it (and to any
            # other run it watches meanwhile).
            observer = run.watch.session.process if run.watch is not None else run.process
            run.tracer_clock = _ProcessClock(observer.pid)
        except OSError as exc:
            raise InfrastructureError(f"the tracer died at start: {exc}") from exc

    def _command(self, shape: _Shape) -> tuple[str, ...]:
        """What bubblewrap runs: a lived-in sandbox's command under its init (`init.py`)."""
        if not shape.lived_in:
            return shape.argv
        init = resources.files("assay.sandbox.bwrap").joinpath("init.py").read_text()
        return (self._python, "-I", "-S", "-B", "-c", init, *shape.argv)

    def _views(self, run: _Run, request: SealedRequest) -> list[ebpf.View]:
        """Where the sandbox shows each host path it binds (as `_bwrap_options` binds them)."""
        views = [ebpf.View("/usr", "/usr"), ebpf.View("/dev", "/dev")]
        views.append(ebpf.View(str(self._etc_dir(run.shape.home_user is not None)), "/etc"))
        binds = {"stat": "/proc/stat", "passwd": "/etc/passwd", "group": "/etc/group"}
        binds |= {"hostname": "/etc/hostname", "hosts": "/etc/hosts"}
        views += [ebpf.View(str(run.box / name), shown) for name, shown in binds.items()]
        if request.home is not None:
            views.append(ebpf.View(str(run.homes), "/home"))
            views.append(ebpf.View(str(run.homes / request.home.user), request.home.path))
        views += [ebpf.View(str(run.shm), "/dev/shm"), ebpf.View(str(run.tmp), "/tmp")]
        if run.shape.lived_in:  # its inputs are in /tmp, its artifact in the workspace
            views.append(ebpf.View(str(self._cover_dir()), str(_RUNTIME_HOME.parent)))
            views.append(ebpf.View(str(run.var_tmp), "/var/tmp"))
            return [*views, ebpf.View(str(run.workspace), LIVED_IN_WORKSPACE_DIR)]
        views += [ebpf.View(str(run.inputs), SANDBOX_INPUT_DIR)]
        views += [ebpf.View(str(run.artifact), SANDBOX_ARTIFACT_DIR)]
        return [*views, ebpf.View(str(run.workspace), SANDBOX_WORKSPACE_DIR)]

    def _bwrap_options(
        self, run: _Run, seccomp_fd: int, result_fd: int, block_fd: int
    ) -> list[str]:
        lived_in = run.shape.lived_in
        # A lived-in sandbox's root is its own, bound first: everything else is on it.
        argv = ["--bind", str(run.root), "/"] if lived_in else []
        argv += ["--unshare-user", "--disable-userns"]
        # A run with a network sink joins the sink's namespace (see _launcher_argv).
        argv += [] if run.netsink is not None else ["--unshare-net"]
        argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        argv += ["--unshare-cgroup", "--hostname", run.shape.hostname]
        argv += ["--uid", str(SANDBOX_INNER_UID), "--gid", str(SANDBOX_INNER_UID)]
        argv += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
        for key, value in (
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/tmp"),
            (RESULT_FD_ENV, str(result_fd)),
        ):
            argv += ["--setenv", key, value]
        argv += ["--ro-bind", "/usr", "/usr"]
        if lived_in:
            argv += _covered(self._cover_dir(), _RUNTIME_HOME.parent)
        for link in _ROOT_LINKS:
            target = Path("/") / link
            if target.is_symlink():
                argv += ["--symlink", os.readlink(target), f"/{link}"]
        argv += ["--ro-bind", str(self._etc_dir(lived_in)), "/etc"]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        if lived_in:
            # A machine has a /sys; the host's cgroup tree in it (the validator's own
            # groups) is covered.
            argv += ["--ro-bind", "/sys", "/sys", "--tmpfs", "/sys/fs/cgroup"]
            argv += ["--remount-ro", "/sys/fs/cgroup"]
        if run.shape.boot_time_shifted:
            argv += ["--ro-bind", str(run.box / "stat"), "/proc/stat"]
        if run.shape.home_user is not None:
            argv += ["--bind", str(run.homes), "/home"]
            for name in ("passwd", "group", "hostname", "hosts"):
                argv += ["--ro-bind", str(run.box / name), f"/etc/{name}"]
        argv += ["--bind", str(run.shm), "/dev/shm", "--bind", str(run.tmp), "/tmp"]
        if lived_in:
            argv += _machine_dirs(run.var_tmp)
            # pid 1 is the init that starts the command (`_command`), not bubblewrap.
            argv += ["--bind", str(run.workspace), LIVED_IN_WORKSPACE_DIR, "--as-pid-1"]
        else:
            argv += ["--dir", SANDBOX_TASK_DIR, "--ro-bind", str(run.inputs), SANDBOX_INPUT_DIR]
            argv += ["--ro-bind", str(run.artifact), SANDBOX_ARTIFACT_DIR]
            argv += ["--bind", str(run.workspace), SANDBOX_WORKSPACE_DIR]
        argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
        workdir = "/" if lived_in else SANDBOX_WORKSPACE_DIR
        argv += ["--chdir", workdir, "--seccomp", str(seccomp_fd)]
        # Everything above is set up at start; the command waits for the claim.
        return [*argv, "--block-fd", str(block_fd)]

    def _launcher_argv(self, run: _Run, bwrap_argv: list[str]) -> list[str]:
        assert run.cgroup is not None
        join = "; ".join(f'echo 0 > "{p}"' for p in run.cgroup.join_files)
        # Into the sink's namespace first: everything after it, bubblewrap included, is in it.
        netns = run.netsink.nsenter() if run.netsink is not None else []
        if run.watch is not None:
            # Joining a v2 group takes write access to the common ancestor's procs
            # (the root's), so the launcher joins as root, then setpriv drops it to the
            # sandbox user. Nothing traces the launcher (bubblewrap's --die-with-parent
            # ties the sandbox to the validator, whose child it is).
            drop = ["setpriv", "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_GID)]
            if run.identity is not None:
                join += f'; echo 0 > "{run.identity.join_file}"'
            script = f'{join} && exec "$@"'
            run.launcher = ("/bin/sh", "-c", script, "sh", *drop, "--clear-groups", *bwrap_argv)
            return [*netns, *run.launcher]
        script = f'{join} && exec "$@"'
        run.launcher = ("/bin/sh", "-c", script, "sh", *bwrap_argv)
        # setpriv sets strace's parent-death signal: strace (and through bwrap's
        # --die-with-parent, the sandbox) must not outlive the validator. Done by an
        # exec rather than a preexec_fn so Popen can use vfork.
        die_with_validator = ["setpriv", "--pdeathsig", "KILL"]
        # strace -u drops the launcher to the sandbox user before its exec, sparing
        # a traced setpriv (its library and nss loading are ~20 traced stops).
        strace = [*tracer.strace_argv(run.trace_prefix, run.shape.trace), "-u", SANDBOX_USER]
        return [*die_with_validator, *netns, *strace, *run.launcher]

    def _claim(self, run: _Run, request: SealedRequest) -> Observation:
        """Give a started sandbox its request, let the command run, and observe it."""
        assert run.cgroup is not None and run.tracer_clock is not None
        inputs = self._input_dir(run, request) if request.inputs or request.service else None
        for item in request.inputs:
            assert inputs is not None
            (inputs / item.name).write_bytes(item.data)
        if request.service is not None:
            assert inputs is not None
            socket_path = inputs / request.service.socket_name
            request.service.listen(socket_path)
            try:
                os.chown(socket_path, SANDBOX_UID, SANDBOX_GID)  # connecting needs write access
            except OSError as exc:
                raise InfrastructureError(f"cannot hand the service socket over: {exc}") from exc
        if request.artifact_dir is not None:
            self._copy_artifact(run, request, Path(request.artifact_dir))
        if request.boot_time_shift_s:
            # Rewritten in place: the bind made at start holds this file's inode.
            with (run.box / "stat").open("r+b") as handle:
                handle.write(_shifted_proc_stat(request.boot_time_shift_s))
        if request.home is not None:
            plant(
                run.homes,
                run.home_stage,
                request.home,
                (SANDBOX_UID, SANDBOX_GID),
                request.limits.workspace_bytes,
            )
        # Before the watch: recording a planted file reads it (from its staged copy, which
        # no watch sees, whatever thread forks meanwhile).
        run.trees_before = tuple(
            record_tree(h) for h in self._tree_places(run, request, before=True)
        )
        if request.home is not None:
            run.home_watch = HomeWatch(run.homes, request.home)  # from here, nothing of ours
        if run.watch is not None:
            run.watch.session.wait_ready()  # its start overlapped this sandbox's
        limits = request.limits
        cpu_base = run.cpu_s()  # the launcher's, bubblewrap's and their tracing's start-up
        tracer_base = run.tracer_clock.cpu_s()
        started = time.monotonic()
        try:
            os.write(run.release_fd, b"go")
        except BrokenPipeError as exc:
            raise InfrastructureError("the started sandbox died before its run") from exc
        out_r, err_r, result_r = run.streams
        captures = [
            _Capture(out_r, limits.output_bytes),
            _Capture(err_r, limits.output_bytes),
            _Capture(result_r, limits.result_bytes),
        ]
        extension = request.service.extension_s if request.service else lambda: 0.0
        check = _limits_check(run, limits, cpu_base, started, extension)
        limit_hit = _supervise(run, captures, limits, check)
        wall_s = time.monotonic() - started
        return self._observe(run, request, limit_hit, wall_s, (cpu_base, tracer_base), captures)

    def _input_dir(self, run: _Run, request: SealedRequest) -> Path:
        """The host side of the request's input directory: a lived-in run's is made fresh
        in its /tmp and handed to the sandbox's user, whose command removes it."""
        if not run.shape.lived_in:
            if request.input_dir != SANDBOX_INPUT_DIR:
                raise ValueError(f"inputs are at {SANDBOX_INPUT_DIR} in this sandbox")
            return run.inputs
        name = _single_below("/tmp", request.input_dir)
        place = run.tmp / name
        place.mkdir(mode=0o700)
        os.chown(place, SANDBOX_UID, SANDBOX_GID)
        return place

    def _copy_artifact(self, run: _Run, request: SealedRequest, source: Path) -> None:
        """The read-only copy at /task/artifact, or a lived-in run's own clone of it in
        its workspace (its user's, writable, as a clone is)."""
        if not run.shape.lived_in:
            if request.artifact_path != SANDBOX_ARTIFACT_DIR:
                raise ValueError(f"the artifact is at {SANDBOX_ARTIFACT_DIR} in this sandbox")
            hostfs.copy_tree(source, run.artifact)
            return
        place = run.workspace / _single_below(LIVED_IN_WORKSPACE_DIR, request.artifact_path)
        size = _tree_bytes(source)
        room = request.limits.workspace_bytes // 2  # the rest is the project's and the run's
        if size > room:
            raise ValueError(f"the artifact's {size} bytes do not fit its clone's {room}")
        place.mkdir(mode=0o755)
        hostfs.copy_tree(source, place)
        for here, dirs, files in os.walk(place):
            for name in (".", *dirs, *files):
                os.chown(Path(here, name), SANDBOX_UID, SANDBOX_GID, follow_symlinks=False)

    def _observe(
        self,
        run: _Run,
        request: SealedRequest,
        limit_hit: LimitHit | None,
        wall_s: float,
        cpu_bases: tuple[float, float],
        captures: list[_Capture],
    ) -> Observation:
        """`cpu_bases`: the run's and its tracer's CPU time when the command was released."""
        assert run.cgroup is not None and run.process is not None
        assert run.tracer_clock is not None
        over_cap = limit_hit is LimitHit.TRACE_CAP
        if run.watch is not None:
            run.watch.session.drain(run.watch)  # every event the kernel kept is in its file
        if over_cap and not tracer.PROFILES[request.trace].read_over_cap:
            trace = TraceSummary(truncated=True)
        elif run.watch is not None:
            past_cap = _trace_left(run, request.limits) <= 0
            trace = ebpf.summarise(
                run.watch,
                ebpf.Views(self._views(run, request)),
                request.argv,
                harness_command=request.harness_command,
                read_bytes=request.limits.trace_bytes if past_cap else None,
            )
        else:
            # Past the cap (whichever limit the poll saw first), only the cap is read.
            past_cap = _trace_left(run, request.limits) <= 0
            trace = tracer.summarise(
                run.trace_prefix,
                run.launcher,
                request.argv,
                request.trace,
                harness_command=request.harness_command,
                read_bytes=request.limits.trace_bytes if past_cap else None,
            )
        run.attached = bool(trace.execs) or over_cap
        network = run.netsink.collect() if run.netsink is not None else NetworkLog()
        home_events, home_lost = run.home_watch.collect() if run.home_watch else ((), False)
        # Once what the watch saw is collected: the recording's own reads are not in it.
        trees = tuple(
            ComparedTree(path, before, record_tree(host))
            for path, before, host in zip(
                request.compare_trees,
                run.trees_before,
                self._tree_places(run, request, before=False),
                strict=True,
            )
        )
        if not run.attached:
            stderr = captures[1].result().data.decode(errors="replace").strip()
            raise InfrastructureError(f"the sandbox never started the command: {stderr[-500:]}")
        root_fd = os.open(run.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            copied = tuple(
                copy_out(root_fd, name, request.copy_out_bytes) for name in request.copy_out
            )
        finally:
            os.close(root_fd)
        return Observation(
            exit_code=None if limit_hit else run.process.returncode,
            limit_hit=limit_hit,
            cpu_s=run.cpu_s() - cpu_bases[0],
            wall_s=wall_s,
            peak_memory_bytes=run.cgroup.peak_memory_bytes(),
            stdout=captures[0].result(),
            stderr=captures[1].result(),
            result=captures[2].result(),
            copied=copied,
            trace=trace,
            tracer_cpu_s=run.tracer_clock.cpu_s() - cpu_bases[1],
            home_events=home_events,
            home_watch_lost=home_lost,
            network=network,
            trees=trees,
        )

    def _tree_places(self, run: _Run, request: SealedRequest, *, before: bool) -> list[str]:
        """The host directory of each of the request's `compare_trees`: a tree of the
        planted home is recorded before the run from the copy it was planted from."""
        if not request.compare_trees:
            return []  # an agent's rep: nothing to stat
        views = ebpf.Views(self._views(run, request))
        places = []
        for path in request.compare_trees:
            host = views.host_path(path)
            staged = _below(path, request.home.path) if request.home and before else None
            if staged is not None:
                assert request.home is not None
                host = str(run.home_stage / request.home.user) + staged
            if host is None:
                raise ValueError(f"{path!r} is no directory the sandbox shows")
            places.append(host)
        return places


def _below(path: str, directory: str) -> str | None:
    """What follows `directory` in `path` ("" for itself), None when it is not below it."""
    if path == directory:
        return ""
    return path[len(directory) :] if path.startswith(directory + "/") else None


def _limits_check(
    run: _Run,
    limits: ResourceLimits,
    cpu_base: float,
    started: float,
    extension_s: Callable[[], float],
) -> Callable[[], LimitHit | float]:
    """The gate polled during a run: which limit (if any) the tree has passed, or else
    the seconds it needs at least to pass the CPU budget or the wall backstop (the
    others hold without the poll: see POLL_MAX_S).

    `extension_s` grows the wall backstop while the run waits on a host service
    (time spent upstream by its inference requests), up to the service's cap."""
    cgroup = run.cgroup
    assert cgroup is not None

    def check() -> LimitHit | float:
        cpu_left = limits.cpu_budget_s - (run.cpu_s() - cpu_base)
        if cpu_left < 0:
            return LimitHit.CPU_BUDGET
        if cgroup.memory_killed():
            return LimitHit.MEMORY
        if cgroup.pids_exhausted():
            return LimitHit.PIDS
        if _trace_left(run, limits) <= 0:
            return LimitHit.TRACE_CAP
        wall_left = limits.wall_backstop_s + extension_s() - (time.monotonic() - started)
        if wall_left < 0:
            return LimitHit.WALL_BACKSTOP
        return min(cpu_left / _CPUS, wall_left)

    return check


def _trace_left(run: _Run, limits: ResourceLimits) -> int:
    """Bytes strace may still write before the cap (pages used, less a page a file at
    most left partly empty); none once it has traced as many processes as allowed."""
    used, files = run.trace_used()
    return 0 if files >= limits.trace_files else limits.trace_bytes - (used - files * _PAGE)


def _widen(fd: int) -> None:
    """Give a capture pipe PIPE_BYTES (see OUTPUT_BATCH_S); where the kernel refuses (a
    user over its pipe quota), the default size only means more wakes."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _supervise(
    run: _Run,
    captures: list[_Capture],
    limits: ResourceLimits,
    over_limit: Callable[[], LimitHit | float],
) -> LimitHit | None:
    """Drain output and poll the limits until the tree is gone; kill it on a breach."""
    process, cgroup = run.process, run.cgroup
    assert process is not None and cgroup is not None
    hit: LimitHit | None = None
    # The gate runs when its wait is up and once the tree is gone, never merely because
    # output arrived: a run writing a byte at a time would otherwise buy a gate check
    # (~0.4 ms of the validator's CPU) for each of its writes.
    due = time.monotonic() + POLL_INTERVAL_S
    exited = os.pidfd_open(process.pid)  # readable once strace (the whole tree) is gone
    tree_gone = False
    with selectors.DefaultSelector() as selector, selectors.DefaultSelector() as exit_only:
        for capture in captures:
            os.set_blocking(capture.fd, False)
            selector.register(capture.fd, selectors.EVENT_READ, capture)
        selector.register(exited, selectors.EVENT_READ, None)
        exit_only.register(exited, selectors.EVENT_READ)
        try:
            while selector.get_map() or process.poll() is None:
                gone = drained = False
                for key, _ in selector.select(max(0.0, due - time.monotonic())):
                    if key.data is None:
                        selector.unregister(exited)
                        gone = tree_gone = True
                    elif key.data.drain():
                        drained = True
                    else:
                        selector.unregister(key.fd)
                if hit is None and (gone or time.monotonic() >= due):
                    verdict = over_limit()
                    if isinstance(verdict, LimitHit):
                        hit = verdict
                        cgroup.kill_all()
                    else:
                        due = time.monotonic() + min(max(verdict, POLL_INTERVAL_S), POLL_MAX_S)
                if hit is not None:
                    if process.poll() is not None:
                        break  # the tree is dead; nothing more worth reading
                    due = time.monotonic() + POLL_INTERVAL_S
                elif drained and not tree_gone:
                    # Let output gather (see OUTPUT_BATCH_S); the tree's exit or the gate's
                    # due time ends the wait sooner.
                    exit_only.select(min(OUTPUT_BATCH_S, max(0.0, due - time.monotonic())))
        finally:
            os.close(exited)
    if hit is None and cgroup.memory_killed():
        hit = LimitHit.MEMORY  # killed between two polls
    if hit is None and _trace_left(run, limits) <= 0:
        hit = LimitHit.TRACE_CAP  # passed it between two polls
    return hit


# The top-level directories a Debian machine has besides those every sandbox has, and
# /var's own (empty: on a read-only root, as a machine's are to its user, but /var/tmp).
_MACHINE_DIRS = (
    *("/boot", "/media", "/mnt", "/opt", "/srv", "/run", "/run/lock"),
    *("/var/backups", "/var/cache", "/var/lib", "/var/local", "/var/log", "/var/mail"),
    *("/var/opt", "/var/spool"),
)
_MACHINE_LINKS = (("/run", "/var/run"), ("/run/lock", "/var/lock"))


def _machine_dirs(var_tmp: Path) -> list[str]:
    """bubblewrap options for a lived-in root's other directories: an artifact that
    lists / or looks for /var/log or /root sees a machine's, not a container's."""
    argv = ["--perms", "0700", "--dir", "/root"]
    for directory in _MACHINE_DIRS:
        argv += ["--perms", "0755", "--dir", directory]
    for target, link in _MACHINE_LINKS:
        argv += ["--symlink", target, link]
    return [*argv, "--bind", str(var_tmp), "/var/tmp"]


def _make_cover(cover: Path, hidden: Path) -> Path:
    """`hidden`'s directory as the host has it, but for `hidden`: its other entries'
    mount points (links copied as links), on a tmpfs bound whole (no host path shows)."""
    directory = hidden.parent
    cover.mkdir(mode=0o755, exist_ok=True)
    if not os.path.ismount(cover):  # another backend of this process may have made it
        hostfs.mount_tmpfs(cover, None, 0, 0, mode=0o755)
    with contextlib.suppress(OSError):
        for entry in sorted(directory.iterdir()):
            target = cover / entry.name
            if entry.name == hidden.name or os.path.lexists(target):
                continue
            if entry.is_symlink():
                target.symlink_to(os.readlink(entry))
            elif entry.is_dir():
                target.mkdir(mode=0o755)
            else:
                target.touch(mode=0o644)
    return cover


def _covered(cover: Path, directory: Path) -> list[str]:
    """bubblewrap options that show `cover` as `directory`, the host's entries bound
    back over their mount points in it."""
    argv = ["--ro-bind", str(cover), str(directory)]
    for entry in sorted(cover.iterdir()):
        if not entry.is_symlink():
            argv += ["--ro-bind", str(directory / entry.name), str(directory / entry.name)]
    return argv


def _tree_bytes(root: Path) -> int:
    """Bytes of the regular files under `root` (symlinks not followed)."""
    total = 0
    for here, _, files in os.walk(root):
        for name in files:
            info = os.lstat(Path(here, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def _single_below(parent: str, path: str) -> str:
    """The one path component `path` adds to `parent` (a ValueError if it is not one)."""
    name = path.removeprefix(parent + "/")
    if name == path or not name or "/" in name or name in (".", ".."):
        raise ValueError(f"{path!r} must name one entry directly under {parent}")
    return name


def _cleanup(run: _Run) -> None:
    errors: list[str] = []

    def attempt(step: Callable[[], object]) -> None:
        try:
            step()
        except (OSError, InfrastructureError) as exc:
            errors.append(str(exc))

    if run.cgroup is not None:
        attempt(run.cgroup.kill_all)
    if run.process is not None:
        if run.process.poll() is None:
            attempt(functools.partial(os.killpg, run.process.pid, signal.SIGKILL))
        if run.process.wait() < 0 and not run.attached:
            # Killed (by us, or with the thread that started it) perhaps before it
            # attached its first child, which then waits stopped forever. (Once it has
            # attached, it dies by a signal whenever the tree does: it ends as its
            # command ended, and a run past a limit is killed.)
            attempt(functools.partial(hostfs.kill_run_processes, run.run_dir))
    if run.watch is not None:
        attempt(run.watch.close)
    if run.identity is not None:
        attempt(run.identity.remove)
    if run.tracer_clock is not None:
        attempt(run.tracer_clock.close)
    if run.home_watch is not None:
        attempt(run.home_watch.close)
    if run.netsink is not None:
        attempt(run.netsink.kill)
    for fd in run.fds:
        attempt(functools.partial(os.close, fd))
    if run.cgroup is not None:
        attempt(run.cgroup.remove)
    attempt(lambda: hostfs.remove_tree(run.run_dir))
    if errors:
        raise InfrastructureError("sandbox cleanup failed: " + "; ".join(errors))


def _shifted_proc_stat(shift_s: int) -> bytes:
    """The host's /proc/stat as of now, its boot time moved by `shift_s`. Its counters
    stand still from here: a program that samples them twice sees an idle machine."""
    lines = Path("/proc/stat").read_bytes().splitlines(keepends=True)
    out = []
    for line in lines:
        if line.startswith(b"btime "):
            line = b"btime %d\n" % (int(line.split()[1]) + shift_s)
        out.append(line)
    return b"".join(out)


def _prepare_home(run: _Run, user: str, hostname: str) -> None:
    """/home for a planted home, and the passwd and group entries of its user (the
    sandbox's uid, /home/<user>, a login shell), which the request's files fill; the
    machine's name in /etc/hostname and /etc/hosts, as a laptop's."""
    run.homes.mkdir(mode=0o755)
    hostfs.shared_mount(run.homes)  # the home's own mount, made at the claim, reaches it
    run.home_stage.mkdir(mode=0o700)  # its secrets are the validator's to read alone
    uid = SANDBOX_INNER_UID
    entry = f"{user}:x:{uid}:{uid}:{user}:/home/{user}:/bin/bash\n"
    (run.box / "passwd").write_text(f"root:x:0:0:root:/root:/bin/bash\n{entry}")
    (run.box / "group").write_text(f"root:x:0:\n{user}:x:{uid}:\n")
    (run.box / "hostname").write_text(f"{hostname}\n")
    (run.box / "hosts").write_text(
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    )


# What a Debian machine's /etc holds besides the essentials, copied from the host's own
# (a Debian install's public defaults), for runs with a planted home (detonation): an
# artifact that counts /etc or reads os-release sees a machine, not a sandbox. Agents'
# runs keep the minimal /etc.
_LIVED_IN_ETC = (
    "adduser.conf",
    "bash.bashrc",
    "debian_version",
    "environment",
    "gai.conf",  # read by getaddrinfo to sort the addresses of a name
    "host.conf",
    "inputrc",
    "issue",
    "issue.net",
    "login.defs",
    "networks",
    "os-release",
    "profile",
    "protocols",
    "services",
    "shells",
    "timezone",
    "ssl/certs/ca-certificates.crt",
    "bindresvport.blacklist",
    "debconf.conf",
    "deluser.conf",
    "e2scrub.conf",
    "ethertypes",
    "ld.so.conf",
    "ld.so.conf.d/libc.conf",
    "libaudit.conf",
    "locale.gen",
    "manpath.config",
    "mime.types",
    "mke2fs.conf",
    "motd",
    "netconfig",
    "pam.conf",
    "rpc",
    "skel/.bash_logout",
    "skel/.bashrc",
    "skel/.profile",
    "sysctl.conf",
    "ucf.conf",
    "xattr.conf",
)


def _lived_in_etc(etc: Path) -> None:
    for name in _LIVED_IN_ETC:
        target = etc / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copyfile(Path("/etc") / name, target)  # os-release: its link's target
    (etc / "hostname").write_text("localhost\n")  # each run binds its own name over it
    # Its own machine id (never the host's), and mtab as systemd makes it.
    (etc / "machine-id").write_text(secrets.token_hex(16) + "\n")
    with contextlib.suppress(FileExistsError):
        (etc / "mtab").symlink_to("../proc/self/mounts")


def _memfd(run: _Run, name: str, data: bytes) -> int:
    """A descriptor to pass to bubblewrap, holding `data` from its start."""
    fd = os.memfd_create(name, 0)
    run.fds.append(fd)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


_VERSIONS: dict[str, str] = {}


def _tool_version(tool: str) -> str:
    if tool not in _VERSIONS:
        try:
            out = subprocess.run(
                [tool, "--version"], capture_output=True, text=True, check=False, timeout=10
            )
            _VERSIONS[tool] = out.stdout.splitlines()[0] if out.stdout else "unknown"
        except (OSError, subprocess.TimeoutExpired):
            _VERSIONS[tool] = "missing"
    return _VERSIONS[tool]
