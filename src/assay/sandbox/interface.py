"""What a sandbox backend is asked to run, and what it reports back.

A backend runs one command sealed and returns what it observed: exit, resources,
the tracer's summary, the files it copied out itself, and the bytes the command
wrote to its result channel. It knows nothing about agents or scoring.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

# Fixed paths inside every sandbox (the agent contract names them).
SANDBOX_TASK_DIR = "/task"
SANDBOX_INPUT_DIR = "/task/input"
SANDBOX_ARTIFACT_DIR = "/task/artifact"
SANDBOX_WORKSPACE_DIR = "/task/workspace"
# The command finds the number of its result-channel descriptor here.
RESULT_FD_ENV = "ASSAY_RESULT_FD"
# A lived-in run (one with a planted home: a detonation's) has no /task, which would name
# the sandbox: its writable project folder is bound here, as a dev container's is, its
# artifact is copied into it (`SealedRequest.artifact_path`), and its inputs are written
# into a directory of its /tmp (`SealedRequest.input_dir`) that its command removes once
# it has read them.
LIVED_IN_WORKSPACE_DIR = "/workspaces"


class InfrastructureError(RuntimeError):
    """The sandbox itself failed or is unsound: the validator must abstain.

    Never recorded as the sandboxed program's failure.
    """


class RunCancelled(InfrastructureError):
    """`cancel_all` ended the run: whatever it did is nobody's result."""


class LimitHit(StrEnum):
    """Which enforced limit ended the run (None in an `Observation` when none)."""

    CPU_BUDGET = "cpu_budget"
    WALL_BACKSTOP = "wall_backstop"
    MEMORY = "memory"
    PIDS = "pids"
    TRACE_CAP = "trace_cap"  # the tracer's record of the run outgrew its cap


class ObserverKind(StrEnum):
    """What watches a run's process tree from outside it.

    EBPF: kernel probes filtered by the observed runs' parent cgroup, each record
    handed to its own run by the run's cgroup; nothing stops the traced processes, so
    their own timing shows no tracer. STRACE: ptrace, every traced call a stop, which a
    payload can time (the weaker one; detonation's default until the bundled detonations
    match their goldens under eBPF, and what agents' reps use, whose liveness evidence it
    reads).
    """

    EBPF = "ebpf"
    STRACE = "strace"


class TraceSet(StrEnum):
    """Which syscalls the tracer records, chosen by whoever asks for the run.

    Every traced call stops the traced process and costs the tracer, so a run
    traces only what its caller reads: an agent's rep needs liveness evidence
    (successful execs and DNS sends of every kind), detonation needs every
    file, process and network event, failed attempts included.
    """

    LIVENESS = "liveness"
    FULL = "full"


@dataclass(frozen=True)
class ResourceLimits:
    cpu_budget_s: float
    wall_backstop_s: float
    memory_bytes: int
    pids: int
    workspace_bytes: int
    result_bytes: int
    output_bytes: int = 64 * 1024  # per stream (stdout, stderr) kept; the rest is drained
    # What the tracer may write for one run; past it the run ends (LimitHit.TRACE_CAP).
    trace_bytes: int = 4 << 20
    trace_files: int = 4096  # processes traced (one file each) in one run


@dataclass(frozen=True)
class InputFile:
    """A file placed read-only at /task/input/<name> before the command starts."""

    name: str
    data: bytes


class HostService(ABC):
    """A validator-side service the command reaches through a Unix socket.

    The backend asks it to listen at `/task/input/<socket_name>` (on the host
    side of that directory) after the inputs are written and before the
    command starts, and lets only the sandbox user connect. This is the only
    way out of the sandbox's empty network namespace.
    """

    socket_name: str

    @abstractmethod
    def listen(self, path: Path) -> None:
        """Serve at `path`; raise `InfrastructureError` when it cannot."""

    @abstractmethod
    def extension_s(self) -> float:
        """Wall seconds the backstop grants on top of its limit, so far (polled)."""


@dataclass(frozen=True)
class HomeFile:
    """A file planted in the home before the command starts."""

    path: str  # relative to the home
    data: bytes
    mode: int = 0o644
    watched: bool = False  # its reads, writes, links and removal are reported


@dataclass(frozen=True)
class Home:
    """A user's home at /home/<user>, planted by the validator before the command
    starts: real files owned by the sandbox's user, their times set `age_s` back,
    and the watched ones watched by inode from outside, so that whatever path,
    handle or link reaches them, the kernel reports it.

    `new_entries` are directories (relative, "" for the home) whose new entries are
    reported: a watched name (a shell profile) may not exist until it is written."""

    user: str
    files: tuple[HomeFile, ...]
    age_s: int = 0
    new_entries: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return f"/home/{self.user}"


@dataclass(frozen=True)
class HomeEvent:
    """What the kernel reported on a watched file: `event` is read, write, attrib
    (mode, times or links changed), linked (it has another name now), deleted,
    moved, or created (a new entry of a watched directory)."""

    path: str  # in the sandbox, the name it was planted under
    event: str
    # The kernel's own words for it: the inotify flags behind `event`, all the times it
    # was seen, e.g. "MODIFY|CLOSE_WRITE" (an event is one fact, whatever flags showed it).
    flags: str = field(default="", compare=False)


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a recorded tree: `digest` is the sha256 of a file's content or of a
    symlink's target ("" for a directory or anything else); the inode and change time
    say whether it is the very entry another record saw (no program sets a change time)."""

    kind: str  # file | dir | symlink | other
    mode: int  # permission bits
    digest: str = ""
    size: int = field(default=0, compare=False)
    inode: int = field(default=0, compare=False)
    changed_ns: int = field(default=0, compare=False)


@dataclass(frozen=True)
class RecordedTree:
    """A directory tree as the validator recorded it, by path relative to its root;
    `cut` says which cap ended the record early ("" when it is whole)."""

    entries: Mapping[str, TreeEntry] = field(default_factory=dict)
    cut: str = ""


@dataclass(frozen=True)
class ComparedTree:
    """A tree the command could write (`SealedRequest.compare_trees`), recorded by the
    validator from outside before the command started and after its tree was gone."""

    path: str  # in the sandbox
    before: RecordedTree
    after: RecordedTree


@dataclass(frozen=True)
class SealedRequest:
    argv: tuple[str, ...]
    limits: ResourceLimits
    inputs: tuple[InputFile, ...] = ()
    service: HostService | None = None
    artifact_dir: str | None = None  # host directory copied to `artifact_path`
    # Where the inputs and the artifact's copy are, inside: /task/input and a read-only
    # /task/artifact, or a lived-in run's: a fresh directory directly under /tmp (owned by
    # the sandbox's user, to remove) and a writable copy directly under
    # LIVED_IN_WORKSPACE_DIR (owned by the user, as a clone is).
    input_dir: str = SANDBOX_INPUT_DIR
    artifact_path: str = SANDBOX_ARTIFACT_DIR
    copy_out: tuple[str, ...] = ()  # single-component names under /task/workspace
    copy_out_bytes: int = 1 << 20
    trace: TraceSet = TraceSet.FULL
    hostname: str = "sandbox"  # what the command sees as the host's name
    home: Home | None = None
    # The command shifts its own clock this far (libfaketime): the kernel's boot time in
    # /proc/stat is shown shifted as much, so that it agrees with the clock and with
    # /proc/uptime (which counts from boot, unshifted, and so agrees already).
    boot_time_shift_s: int = 0
    # The command is the caller's harness, not the subject: its own file calls are left
    # out of the trace (its descendants', the subject's, are all in).
    harness_command: bool = False
    observer: ObserverKind = ObserverKind.STRACE
    # The command's network is a namespace of its own in which every TCP connection and
    # DNS query reaches the validator's recording sink (`Observation.network`); without
    # it, the command has no network at all.
    network_sink: bool = False
    # Directories (sandbox paths the backend shows: the home, or under the workspace)
    # recorded before the command starts and after its tree is gone (`Observation.trees`).
    compare_trees: tuple[str, ...] = ()


class CopyStatus(StrEnum):
    OK = "ok"
    MISSING = "missing"
    NOT_REGULAR = "not_regular"  # symlink, directory, fifo, device ...
    TOO_LARGE = "too_large"


@dataclass(frozen=True)
class CopiedFile:
    name: str
    status: CopyStatus
    data: bytes = b""


@dataclass(frozen=True)
class Peer:
    family: str  # inet, inet6, unix, netlink, ...
    address: str
    port: int | None = None


@dataclass(frozen=True)
class Link:
    """A link the traced tree made: `path` now names `target` (a symlink's target as
    written, made absolute against the link's directory; a hard link's existing file)."""

    path: str
    target: str
    hard: bool


@dataclass(frozen=True)
class Executed:
    """A successful exec: the file the kernel was asked to run, and the argv it got
    (whose first word the caller chooses freely)."""

    file: str
    argv: tuple[str, ...]
    # The sha256 of the file's content when the run ended ("" when unknown: the strace
    # observer does not hash, or the file was gone).
    sha256: str = ""


@dataclass(frozen=True)
class TraceSummary:
    """The tracer's own record of what the sandboxed process tree did."""

    execs: tuple[tuple[str, ...], ...] = ()  # the command's own first, whatever the pids
    # Paths are as the kernel resolved them: what a call opened, or else the path it
    # named made absolute against its directory handle (`assay.sandbox.paths`).
    reads: tuple[str, ...] = ()  # read-only opens (tried or done) outside the runtime's own files
    writes: tuple[str, ...] = ()  # paths opened (or tried) for writing or creation
    unlinks: tuple[str, ...] = ()
    renames: tuple[tuple[str, str], ...] = ()
    connects: tuple[Peer, ...] = ()  # connect/sendto/sendmsg/sendmmsg destinations
    dns_queries: tuple[str, ...] = ()  # query names decoded from outgoing packets
    links: tuple[Link, ...] = ()  # symlinks and hard links made
    executed: tuple[Executed, ...] = ()  # each distinct successful exec, by file and argv
    # Each path written, renamed (either side) or removed, with the argv of the program
    # its process last ran (() when it ran none that was seen): who wrote it, as a
    # process. Kept as far as room allows; a path missing here has no known writer.
    written_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Reads of what tells a sandbox from a host (seccomp status, boot time, uptime) and
    # runs of one failing call repeated (timing the tracer), as text.
    probes: tuple[str, ...] = ()
    # Processes still alive when the command ended, by the argv each last ran (the
    # eBPF observer sees every exit; the strace observer reports none).
    survivors: tuple[tuple[str, ...], ...] = ()
    truncated: bool = False  # some events were dropped: a list reached the summary's cap

    def saw_dns(self, host: str) -> bool:
        wanted = host.rstrip(".").lower()
        return any(q.rstrip(".").lower() == wanted for q in self.dns_queries)

    def saw_exec_with(self, token: str) -> bool:
        return any(token in arg for argv in self.execs for arg in argv)


@dataclass(frozen=True)
class Flow:
    """One TCP connection the sink accepted, wherever the command meant it to go."""

    at: float  # CLOCK_MONOTONIC seconds at its accept (the sandbox shares the clock)
    address: str  # its original destination
    port: int
    name: str  # the name the sink's resolver handed `address` out for ("" if none)
    size: int  # bytes it sent
    data: bytes  # the first of them, capped
    http_method: str = ""  # "" when it was not HTTP
    http_host: str = ""
    http_path: str = ""
    tls_name: str = ""  # the server name a TLS ClientHello asked for (SNI)


@dataclass(frozen=True)
class NameQuery:
    """One DNS query the sink's resolver answered."""

    at: float
    name: str
    qtype: str  # A, AAAA, TXT, ... or the number of an unknown type


@dataclass(frozen=True)
class NetworkLog:
    """What a run's network sink saw (`SealedRequest.network_sink`)."""

    flows: tuple[Flow, ...] = ()
    queries: tuple[NameQuery, ...] = ()
    truncated: bool = False  # the sink's records reached their cap: some are missing


@dataclass(frozen=True)
class CapturedStream:
    data: bytes
    total_bytes: int

    @property
    def truncated(self) -> bool:
        return self.total_bytes > len(self.data)


@dataclass(frozen=True)
class Observation:
    exit_code: int | None  # None when killed by the validator
    limit_hit: LimitHit | None
    cpu_s: float  # of the sandboxed tree and of its tracer
    wall_s: float
    peak_memory_bytes: int
    stdout: CapturedStream
    stderr: CapturedStream
    result: CapturedStream  # what the command wrote to its result channel
    copied: tuple[CopiedFile, ...] = ()
    trace: TraceSummary = field(default_factory=TraceSummary)
    tracer_cpu_s: float = 0.0  # the part of `cpu_s` the tracer spent
    home_events: tuple[HomeEvent, ...] = ()  # what the watch on the home saw
    home_watch_lost: bool = False  # the watch's queue overflowed: some events are missing
    network: NetworkLog = field(default_factory=NetworkLog)  # what the network sink saw
    trees: tuple[ComparedTree, ...] = ()  # the request's `compare_trees`, in its order

    def copied_file(self, name: str) -> CopiedFile:
        for item in self.copied:
            if item.name == name:
                return item
        return CopiedFile(name, CopyStatus.MISSING)


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str


class SandboxBackend(ABC):
    """Runs one command sealed. Raises `InfrastructureError` when it cannot."""

    name: str
    sandboxed: bool = True  # False only for a rep that never ran (refused, or its cap spent)

    @property
    @abstractmethod
    def python(self) -> str:
        """Path of the validator-owned Python interpreter inside the sandbox."""

    @property
    @abstractmethod
    def python_path(self) -> tuple[str, ...]:
        """Directories (paths inside the sandbox) the shim appends to `sys.path`:
        the agents' runtime beside the standard library."""

    @property
    @abstractmethod
    def private_paths(self) -> tuple[str, ...]:
        """Host paths of the backend's own (run directories) that nothing inside
        the sandbox may show; the soundness check looks for them."""

    @property
    @abstractmethod
    def digest(self) -> str:
        """Identifies the backend and its configuration, the agents' runtime
        included (recorded with every run)."""

    @abstractmethod
    def run(self, request: SealedRequest) -> Observation: ...

    @abstractmethod
    def sweep_stale(self) -> int:
        """Remove what runs of dead validators left behind; returns how many were swept."""

    @abstractmethod
    def check(self, *, ebpf: bool = False) -> tuple[CheckResult, ...]:
        """Prove the backend is sound on this host (and, with `ebpf`, that the eBPF
        observer sees what it must)."""

    @abstractmethod
    def cancel_all(self) -> None:
        """Kill every run in flight (its caller is stopping early).

        Each of those runs raises `RunCancelled` promptly, at whatever stage it
        was (starting, running or being observed).
        """
