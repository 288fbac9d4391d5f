"""The eBPF observer: one bpftrace session for many runs, and each run's summary.

bpftrace runs as root outside the sandbox, on a program (`ebpf_program`) filtered in
the kernel on the parent cgroup v2 group under which every observed run's group is
made: the launcher joins its run's group (beside its v1 groups, which hold the
limits, on a v1 host) before it execs bubblewrap, so everything the sandbox starts is
in it and nothing can leave it (the sandbox never sees the cgroup tree). Nothing
stops a traced process, so a payload timing its own calls sees the same cost inside
the sandbox as outside.

One session serves a backend's runs (`Session`): bpftrace compiles and attaches its
program once (about 2.5 CPU-s on a 2-core host), on the first observed run, and every
line it prints names the run's group, by which the session hands each run (`Watch`)
its own records alone. At a run's end the session is drained for it: a marker is called on
every CPU, and once each CPU's marker is read, everything the kernel buffered for the
run has been read too. Events the kernel could not buffer are reported by bpftrace as
lost: the summaries of the runs watched then are marked truncated. A session whose
bpftrace dies fails the runs it watched (the host's fault); the next run starts
another.

Paths come from the kernel's dentries (see `ebpf_program`), each made of a filesystem
(its device) and a path inside it; `Views` says where the sandbox mounts each of
those, so a path is named as the sandbox's processes see it. The executed file is
hashed on the host through the same views (once the run has ended, before its
directories are removed): a program is known by its content, not its name.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import ipaddress
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from assay.sandbox.bwrap import ebpf_program
from assay.sandbox.bwrap.ebpf_program import FILE_CALLS
from assay.sandbox.bwrap.tracer import (
    _FINGERPRINTS,
    _PROBE_NAMES,
    _PROBE_REPEATS,
    _QUIET_READ_PREFIXES,
    PROFILES,
    WRITERS_KEPT,
    decode_dns_query,
)
from assay.sandbox.interface import (
    Executed,
    InfrastructureError,
    Link,
    Peer,
    TraceSet,
    TraceSummary,
)
from assay.sandbox.paths import resolved

BPFTRACE = "bpftrace"
BTF = Path("/sys/kernel/btf/vmlinux")
_TRACEFS = (("tracefs", Path("/sys/kernel/tracing")), ("debugfs", Path("/sys/kernel/debug")))
READY_TIMEOUT_S = 60.0  # compiling and attaching the program (about 2.5 CPU-s here)
DRAIN_TIMEOUT_S = 30.0
_PARENT_FIELDS = ("__parent", "parent")  # kernfs_node's, newest kernels first
_SIGNED_BYTE = re.compile("\uffffff([0-9a-f]{2})")
_WATCH_BUFFER = 1 << 16
_READ_BYTES = 1 << 16
_MARKER_WHICH = 1 << 29  # getpriority()'s `which` for markers: this plus a secret draw
_PROC_MAGIC = 0x9FA0
_WRITE_FLAGS = 0o3 | 0o100 | 0o1000 | 0o2000  # O_WRONLY|O_RDWR, O_CREAT, O_TRUNC, O_APPEND
_NOT_A_SOCKET = (-9, -88, -14)  # EBADF, ENOTSOCK, EFAULT: no attempt at all
_ENOENT = -2
_FAMILIES = {1: "unix", 2: "inet", 10: "inet6", 16: "netlink"}
_HASH_BYTES = 256 << 20  # a larger executed file is named by its path alone
_ESCAPED = re.compile(rb"\\x([0-9a-f]{2})")
_KINDS = {number: call.kind for number, call in enumerate(FILE_CALLS, start=1)}


def kernel_dev(st_dev: int) -> int:
    """A device number as the kernel's superblock holds it (MKDEV: major << 20)."""
    return (os.major(st_dev) << 20) | os.minor(st_dev)


def _mount_root(path: Path) -> Path:
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


@dataclass(frozen=True)
class View:
    """Where the sandbox shows a host path (a bind)."""

    host: str
    sandbox: str


class Views:
    """Every filesystem path the sandbox shows, by device and path inside the device."""

    def __init__(self, views: Iterable[View]) -> None:
        self._by_dev: dict[int, list[tuple[str, str]]] = {}
        self._to_host: list[tuple[str, str]] = []
        for view in views:
            try:
                st_dev = os.stat(view.host).st_dev
            except OSError:
                continue
            host = Path(view.host)
            inside = "/" + os.path.relpath(host, _mount_root(host)).removeprefix(".")
            inside = inside.rstrip("/") or "/"
            self._by_dev.setdefault(kernel_dev(st_dev), []).append((inside, view.sandbox))
            self._to_host.append((view.sandbox, view.host))
        for places in self._by_dev.values():
            places.sort(key=lambda p: -len(p[0]))
        self._to_host.sort(key=lambda p: -len(p[0]))

    def sandbox_path(self, dev: int, magic: int, inside: str) -> str:
        if magic == _PROC_MAGIC:
            return "/proc" + (inside if inside != "/" else "")
        for prefix, shown in self._by_dev.get(dev, ()):
            rest = _under(inside, prefix)
            if rest is not None:
                return (shown.rstrip("/") + rest) or "/"
        return inside  # a filesystem of bubblewrap's own (its root, /dev)

    def host_path(self, sandbox: str) -> str | None:
        for shown, host in self._to_host:
            rest = _under(sandbox, shown)
            if rest is not None:
                return host.rstrip("/") + rest
        return None


def _under(path: str, prefix: str) -> str | None:
    """What follows `prefix` in `path` ("" for itself), None when not under it."""
    if prefix == "/":
        return path if path != "/" else ""
    if path == prefix:
        return ""
    return path[len(prefix) :] if path.startswith(prefix + "/") else None


@dataclass
class _Walk:
    components: list[str] = field(default_factory=list)
    dev: int = 0
    magic: int = 0
    cut: bool = False

    def inside(self) -> str:
        return "/" + "/".join(reversed(self.components))


@dataclass
class _Record:
    nsecs: int
    pid: int
    tid: int
    kind: str
    values: list[int]
    strings: dict[int, bytes] = field(default_factory=dict)
    walks: dict[str, _Walk] = field(default_factory=dict)
    chunks: dict[str, bytearray] = field(default_factory=dict)
    _open_walk: _Walk | None = None


def _unescape(text: bytes) -> bytes:
    """A buffer as bpftrace's %r prints it: unprintable bytes as \\xNN."""
    return _ESCAPED.sub(lambda m: bytes((int(m[1], 16),)), text)


def parse(path: Path, nonce: str, read_bytes: int | None) -> list[_Record]:
    """The records of a run's output file, in the kernel's time order."""
    marker = nonce.encode() + b" "
    with path.open("rb") as handle:
        data = handle.read(read_bytes) if read_bytes is not None else handle.read()
    lines: list[bytes] = []
    for line in data.split(b"\n"):
        if line.startswith(marker) or not lines:
            lines.append(line)
        else:  # a printed string held a newline
            lines[-1] += b"\n" + line
    current: dict[int, _Record] = {}
    records: list[_Record] = []
    for line in lines:
        if not line.startswith(marker):
            continue
        tag, _, rest = line[len(marker) :].partition(b" ")
        if tag == b"h":
            record = _head(rest)
            if record is None:
                continue
            current[record.tid] = record
            records.append(record)
            continue
        tid_text, _, rest = rest.partition(b" ")
        if not tid_text.isdigit() or int(tid_text) not in current:
            continue
        _feed(current[int(tid_text)], tag, rest)
    records.sort(key=lambda r: r.nsecs)
    return records


# Records whose first line ends with a string (the call's first path), after this many numbers.
_HEAD_NUMBERS = {"file": 3, "exec": 1}


def _head(rest: bytes) -> _Record | None:
    """A record from its first line: when, process, thread, kind, numbers[, string]."""
    words = rest.split(b" ", 4)
    if len(words) < 4 or not all(w.lstrip(b"-").isdigit() for w in words[:3]):
        return None
    kind = words[3].decode(errors="replace")
    tail = words[4] if len(words) > 4 else b""
    numbers = _HEAD_NUMBERS.get(kind)
    fields = tail.split(b" ", numbers) if numbers is not None else tail.split(b" ")
    values = fields[:numbers] if numbers is not None else fields
    record = _Record(
        int(words[0]),
        int(words[1]),
        int(words[2]),
        kind,
        [int(w) for w in values if w.lstrip(b"-").isdigit()],
    )
    if numbers is not None and len(fields) > numbers:
        record.strings[1] = fields[numbers]
    return record


def _feed(record: _Record, tag: bytes, rest: bytes) -> None:
    if tag == b"c":
        if record._open_walk is None:
            record._open_walk = _Walk()
        record._open_walk.components.append(rest.decode("utf-8", "backslashreplace"))
    elif tag == b"w":
        words = rest.split(b" ")
        walk = record._open_walk or _Walk()
        record._open_walk = None
        if len(words) == 4:
            walk.dev, walk.magic, walk.cut = int(words[1]), int(words[2], 16), words[3] == b"1"
            record.walks[words[0].decode()] = walk
    elif tag == b"s":
        slot, _, text = rest.partition(b" ")
        if slot.isdigit():
            record.strings[int(slot)] = text
    elif tag in (b"a", b"b", b"p"):
        record.chunks.setdefault(tag.decode(), bytearray()).extend(_unescape(rest))


def _sockaddr(data: bytes) -> Peer | None:
    if len(data) < 2:
        return None
    family = _FAMILIES.get(int.from_bytes(data[:2], "little"))
    if family == "inet" and len(data) >= 8:
        address = ".".join(str(b) for b in data[4:8])
        return Peer(family, address, int.from_bytes(data[2:4], "big"))
    if family == "inet6" and len(data) >= 24:
        address = str(ipaddress.IPv6Address(data[8:24]))
        return Peer(family, address, int.from_bytes(data[2:4], "big"))
    if family == "unix":
        raw = data[2:]
        shown = "@" + raw[1:].split(b"\0")[0].decode(errors="replace") if raw[:1] == b"\0" else ""
        return Peer(family, shown or raw.split(b"\0")[0].decode(errors="replace"))
    if family == "netlink" and len(data) >= 8:
        return Peer(family, str(int.from_bytes(data[4:8], "little")))
    return Peer(family, "") if family else None


@functools.lru_cache(maxsize=1024)
def _content_hash(host: str, stamp: tuple[int, int, int, int]) -> str:
    digest = hashlib.sha256()
    with open(host, "rb") as handle:
        digest.update(handle.read(_HASH_BYTES))
    return digest.hexdigest()


def file_hash(host: str | None) -> str:
    """The sha256 of a host file ("" when it is gone or not a regular file)."""
    if host is None:
        return ""
    try:
        st = os.stat(host)
        if not os.path.isfile(host) or st.st_size > _HASH_BYTES:
            return ""
        return _content_hash(host, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    except OSError:
        return ""


class _Summary:
    """Ordered capped sets, as the strace tracer's summary keeps them."""

    def __init__(self) -> None:
        profile = PROFILES[TraceSet.FULL]
        self.items = profile.summary_items
        self.room = profile.summary_chars
        self.truncated = False
        self.found: dict[str, dict[object, None]] = {}

    def add(self, kind: str, item: object, size: int) -> None:
        bucket = self.found.setdefault(kind, {})
        if item in bucket:
            return
        if len(bucket) >= self.items or size > self.room:
            self.truncated = True
            return
        bucket[item] = None
        self.room -= size

    def get(self, kind: str) -> tuple:  # type: ignore[type-arg]
        return tuple(self.found.get(kind, {}))


class _Reader:
    """The records of one run, read into its summary."""

    def __init__(self, views: Views, command: tuple[str, ...], harness_command: bool) -> None:
        self.views = views
        self.command = command
        self.harness_command = harness_command
        self.summary = _Summary()
        self.command_pid: int | None = None
        self.members: set[int] = set()
        self.parent: dict[int, int] = {}
        self.argv: dict[int, tuple[str, ...]] = {}
        self.processes: set[int] = set()
        self.exited: dict[int, int] = {}
        self.failures: dict[tuple[int, str, str], int] = {}
        self.writers: dict[tuple[str, tuple[str, ...]], None] = {}
        self.names_failed: dict[tuple[int, str, str], set[str]] = {}

    def path(self, walk: _Walk | None) -> str | None:
        if walk is None or (walk.dev == 0 and walk.magic == 0):
            return None
        return self.views.sandbox_path(walk.dev, walk.magic, walk.inside())

    def named(self, record: _Record, slot: int) -> str:
        text = record.strings.get(slot, b"").decode("utf-8", "backslashreplace")
        return resolved(text, self.path(record.walks.get(f"b{slot}")))

    def feed(self, record: _Record) -> None:
        if record.kind == "exec":
            self._exec(record)
            return
        if record.pid not in self.members:
            return
        if record.kind == "fork" and record.values:
            child = record.values[0]
            self.members.add(child)
            self.parent[child] = record.pid
        elif record.kind == "exit":
            if record.pid == record.tid:
                self.processes.add(record.pid)
                self.exited.setdefault(record.pid, record.nsecs)
        elif record.kind == "file":
            if not (self.harness_command and record.pid == self.command_pid):
                self._file(record)
        elif record.kind in ("connect", "send"):
            self._network(record)

    def _exec(self, record: _Record) -> None:
        data = bytes(record.chunks.get("b", b""))[: record.values[0] if record.values else 0]
        argv = tuple(a.decode("utf-8", "backslashreplace") for a in data.split(b"\0")[:-1])
        if self.command_pid is None:
            if argv != self.command:
                return  # the launcher's and bubblewrap's own
            self.command_pid = record.pid
            self.members.add(record.pid)
        if record.pid not in self.members:
            return
        self.processes.add(record.pid)
        self.argv[record.pid] = argv
        # The file as the caller named it (the strace observer's view, which attribution
        # reads), hashed as the kernel resolved it (a host symlink such as python3 followed).
        ran = self.path(record.walks.get("exe")) or ""
        named = record.strings.get(1, b"").decode("utf-8", "backslashreplace")
        file = named if named.startswith("/") else ran or (argv[0] if argv else "")
        size = sum(map(len, argv)) + 1
        self.summary.add("execs", argv, size)
        sha = file_hash(self.views.host_path(ran or file))
        self.summary.add("executed", Executed(file, argv, sha), size + len(file))

    def _file(self, record: _Record) -> None:
        if len(record.values) < 2:
            return
        number, result = record.values[0], record.values[1]
        kind = _KINDS.get(number)
        if kind == "open":
            self._open(record, result, record.values[2] if len(record.values) > 2 else 0)
            return
        first = self.named(record, 1)
        if result < 0:
            self._failed(record.pid, kind or "", first, result)
        if kind == "unlink":
            self.summary.add("unlinks", first, len(first))
            self._written(record.pid, first)
        elif kind == "rename" and 2 in record.strings:
            second = self.named(record, 2)
            self.summary.add("renames", (first, second), len(first) + len(second))
            self._written(record.pid, first)
            self._written(record.pid, second)
        elif kind in ("link", "symlink") and result == 0 and 2 in record.strings:
            path = self.named(record, 2)
            if kind == "link":
                target = first
            else:
                written = record.strings[1].decode("utf-8", "backslashreplace")
                target = resolved(written, os.path.dirname(path))
            self.summary.add("links", Link(path, target, kind == "link"), len(path) + len(target))

    def _open(self, record: _Record, result: int, flags: int) -> None:
        writing = bool(flags & _WRITE_FLAGS)
        path = (self.path(record.walks.get("to")) if result >= 0 else None) or self.named(record, 1)
        if result < 0:
            self._failed(record.pid, "open", path, result)
        if writing:
            self.summary.add("writes", path, len(path))
            self._written(record.pid, path)
        elif _FINGERPRINTS.fullmatch(path):
            shown = re.sub(r"^/proc/\d+/", "/proc/<pid>/", path)
            self.summary.add("probes", f"read {shown}", len(shown) + 5)
        elif not path.startswith(_QUIET_READ_PREFIXES):
            self.summary.add("reads", path, len(path))

    def _written(self, pid: int, path: str) -> None:
        """`path` written, renamed or removed by `pid`, as the program it (or its nearest
        ancestor) last ran (a path without a known writer is nobody's to discount)."""
        if len(self.writers) < WRITERS_KEPT:
            self.writers.setdefault((path, self._argv_of(pid)), None)

    def _failed(self, pid: int, call: str, path: str, result: int) -> None:
        """One process failing the same call on one path, or on many names of one
        directory, times its calls (as the strace tracer counts it)."""
        if path.startswith(_QUIET_READ_PREFIXES):
            return
        key = (pid, call, path)
        count = self.failures.get(key, 0) + 1
        self.failures[key] = count
        if count == _PROBE_REPEATS:
            self._probe(f"{_PROBE_REPEATS}+ failed {call}() calls on {path} in one process")
        if count == 1 and result == _ENOENT:
            directory = os.path.dirname(path)
            names = self.names_failed.setdefault((pid, call, directory), set())
            names.add(path)
            if len(names) == _PROBE_NAMES:
                self._probe(
                    f"failed {call}() calls on {_PROBE_NAMES}+ names in {directory}/ in one process"
                )

    def _probe(self, text: str) -> None:
        self.summary.add("probes", text, len(text))

    def _network(self, record: _Record) -> None:
        result = record.values[0] if record.values else -1
        if result in _NOT_A_SOCKET:
            return
        peer = _sockaddr(bytes(record.chunks.get("a", b"")))
        if peer is not None:
            self.summary.add("connects", peer, len(peer.address) + 16)
        if record.kind != "send" or result <= 0:
            return
        connected_53 = len(record.values) > 1 and record.values[1] == 0x3500
        if connected_53 or (peer is not None and peer.port == 53):
            query = decode_dns_query(bytes(record.chunks.get("p", b"")))
            if query is not None:
                self.summary.add("dns", query, len(query))

    def survivors(self) -> tuple[tuple[str, ...], ...]:
        """The processes still alive when the command ended (the namespace's end killed
        them), each by the argv it last ran (or its parent's, had it run none)."""
        if self.command_pid is None:
            return ()
        ended = self.exited.get(self.command_pid)
        alive = [
            pid
            for pid in sorted(self.processes)
            if pid != self.command_pid
            and (ended is None or self.exited.get(pid, ended + 1) > ended)
        ]
        return tuple(dict.fromkeys(self._argv_of(pid) for pid in alive))

    def _argv_of(self, pid: int) -> tuple[str, ...]:
        for _ in range(64):
            if pid in self.argv:
                return self.argv[pid]
            if pid not in self.parent:
                break
            pid = self.parent[pid]
        return ()


def summarise(
    watch: Watch,
    views: Views,
    command: Iterable[str],
    harness_command: bool = False,
    read_bytes: int | None = None,
) -> TraceSummary:
    """The command's events (from its exec on) and all its descendants', from a
    drained watch."""
    records = parse(watch.output, watch.session.nonce, read_bytes)
    reader = _Reader(views, tuple(command), harness_command)
    for record in records:
        reader.feed(record)
    s = reader.summary
    return TraceSummary(
        execs=s.get("execs"),
        executed=s.get("executed"),
        reads=s.get("reads"),
        writes=s.get("writes"),
        unlinks=s.get("unlinks"),
        renames=s.get("renames"),
        links=s.get("links"),
        probes=s.get("probes"),
        connects=s.get("connects"),
        dns_queries=s.get("dns"),
        survivors=reader.survivors(),
        written_by=tuple(reader.writers),
        truncated=s.truncated or watch.lost,
    )


@functools.cache
def _mount_tracefs() -> None:
    """Tracepoints are found through tracefs (and bpftrace looks under debugfs too):
    mounted here when the host has not (the validator runs as root)."""
    for kind, place in _TRACEFS:
        if place.is_dir() and not os.path.ismount(place):
            mount = ["mount", "-t", kind, kind, str(place)]
            subprocess.run(mount, capture_output=True, check=False)


def unavailable() -> str | None:
    """Why the eBPF observer cannot run on this host, None when it may."""
    if not BTF.exists():
        return f"the kernel has no BTF ({BTF})"
    if shutil.which(BPFTRACE) is None:
        return "bpftrace is not installed (scripts/install-system-tools.sh)"
    _mount_tracefs()
    if not Path("/sys/kernel/tracing/events/syscalls").is_dir():
        return "no syscall tracepoints under /sys/kernel/tracing (tracefs)"
    return None


@functools.cache
def parent_field() -> str:
    """The name of kernfs_node's parent pointer on this kernel, as its BTF says (6.15
    renamed `parent` to `__parent`)."""
    try:
        shown = subprocess.run(
            [BPFTRACE, "-lv", "struct kernfs_node"],
            capture_output=True,
            text=True,
            check=False,
            timeout=READY_TIMEOUT_S,
            env=_bpftrace_env(),
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InfrastructureError(f"cannot read the kernel's struct kernfs_node: {exc}") from exc
    fields = set(re.findall(r"struct kernfs_node \*(\w+);", shown))
    for name in _PARENT_FIELDS:
        if name in fields:
            return name
    raise InfrastructureError(
        "the kernel's struct kernfs_node has no parent field (neither __parent nor parent):"
        " the eBPF observer cannot filter its runs by their parent group"
    )


def _printed(data: str) -> bytes:
    """A printf's output as bpftrace's JSON holds it, back to its bytes: bpftrace 0.17
    escapes a byte >= 0x80 as a sign-extended \\uffffffXX (\\uffff, then "ffXX")."""
    if "\uffff" in data:
        data = _SIGNED_BYTE.sub(lambda m: chr(int(m[1], 16)), data)
    return data.encode("latin-1", "replace")


_PRINTF = b'{"type": "printf", "data": "'
_PRINTF_END = b'\\n"}'  # the printf's own newline, escaped, and the JSON's end


def _plain_printf(line: bytes) -> bytes | None:
    """A printf's output with nothing escaped but its final newline, read without a JSON
    parser (most lines: the reader's cost is per line); None for any other line."""
    if line.startswith(_PRINTF) and line.endswith(_PRINTF_END):
        inner = line[len(_PRINTF) : -len(_PRINTF_END)]
        if b"\\" not in inner:  # a quote inside is escaped too
            return inner + b"\n"
    return None


def _online_cpus() -> list[int]:
    """The CPUs the kernel runs tasks on (/sys/devices/system/cpu/online: "0-3,6")."""
    try:
        ranges = Path("/sys/devices/system/cpu/online").read_text().strip().split(",")
        return [
            cpu
            for first, _, last in (r.partition("-") for r in ranges)
            for cpu in range(int(first), int(last or first) + 1)
        ]
    except (OSError, ValueError):
        return list(range(os.cpu_count() or 1))


class Watch:
    """One run's part of a session: the records printed for its cgroup, written to
    `output` (on the run's trace tmpfs, which caps them) as the session reads them."""

    def __init__(self, session: Session, cgroup_id: int, output: Path) -> None:
        self.session = session
        self.cgroup_id = cgroup_id
        self.output = output
        self.lost = False  # events the kernel could not buffer while the run was watched
        self._file: BinaryIO | None = output.open("wb", buffering=_WATCH_BUFFER)

    def write(self, data: bytes) -> None:
        if self._file is None:
            return
        try:
            self._file.write(data)
        except OSError:  # the trace tmpfs is full: the run is past its cap
            self.close_file()

    def close_file(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def close(self) -> None:
        """Stop watching (idempotent): nothing more is written to `output`."""
        self.session.forget(self)


class Session:
    """One bpftrace for many runs, filtered in the kernel on the parent group their
    cgroup v2 groups are made under; each line names its run's group, by which the
    reader thread writes it to that run's watch (a line of a group not watched is
    dropped). It is ready once `wait_ready` returns. bpftrace prints JSON, in which a
    printed string cannot end its line: a line is one printf, and bpftrace's own report
    of lost events cannot be forged.

    The kernel hands events over in a buffer per CPU, each in order: a run's end is
    drained by a marker called on every CPU (`drain`) once the run is over."""

    def __init__(self, parent_id: int, work: Path) -> None:
        reason = unavailable()
        if reason is not None:
            raise InfrastructureError(f"the eBPF observer cannot run: {reason}")
        self.parent_id = parent_id
        self.nonce = secrets.token_hex(6)
        self._prefix = self.nonce.encode() + b" "
        spec = ebpf_program.SessionSpec(
            self.nonce, parent_id, parent_field(), _MARKER_WHICH + secrets.randbelow(1 << 29)
        )
        self._marker_which = spec.marker_which
        self._work = work / f"ebpf-{secrets.token_hex(6)}"
        self._work.mkdir(mode=0o700)
        script = self._work / "program.bt"
        script.write_text(ebpf_program.program(spec))
        self._errors = self._work / "errors"
        self._changed = threading.Condition()
        self._watches: dict[int, Watch] = {}
        self._marks: dict[int, set[int]] = {}
        self._markers = itertools.count(1)
        self._ready = self._ended = False
        with self._errors.open("wb") as errors:
            self.process = self._spawn(script, errors)
        # Signalled through its pidfd: never another process that took its pid once reaped.
        self._pidfd = os.pidfd_open(self.process.pid)
        self._stopped = False
        self._reader = threading.Thread(target=self._read, name="assay-ebpf", daemon=True)
        self._reader.start()

    @staticmethod
    def _spawn(script: Path, errors: BinaryIO) -> subprocess.Popen[bytes]:
        try:
            return subprocess.Popen(
                # Its stdout, line-buffered (-o would buffer even the readiness line).
                [BPFTRACE, "-f", "json", "-B", "line", str(script)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                start_new_session=True,
                env=_bpftrace_env(),
            )
        except OSError as exc:
            raise InfrastructureError(f"cannot start bpftrace: {exc}") from exc

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and not self._ended

    def wait_ready(self) -> None:
        """Until the probes are attached (compiling and attaching them takes seconds: a
        run waits only before its command starts); bpftrace failing is the host's fault."""
        with self._changed:
            self._changed.wait_for(lambda: self._ready or self._ended, READY_TIMEOUT_S)
            if self._ready:
                return
        stderr = ""
        with contextlib.suppress(OSError):
            stderr = self._errors.read_text(errors="replace")
        self.stop()  # one that never got ready is not waited on again: the next run starts anew
        errors = [line for line in stderr.splitlines() if "ERROR" in line and "MEMLOCK" not in line]
        raise InfrastructureError(f"bpftrace did not attach its probes: {' '.join(errors)[-400:]}")

    def watch(self, cgroup_id: int, output: Path) -> Watch:
        """Start handing the records of group `cgroup_id` to a watch (before anything
        joins the group)."""
        watch = Watch(self, cgroup_id, output)
        with self._changed:
            self._watches[cgroup_id] = watch
        return watch

    def forget(self, watch: Watch) -> None:
        with self._changed:
            if self._watches.get(watch.cgroup_id) is watch:
                del self._watches[watch.cgroup_id]
            watch.close_file()

    def drain(self, watch: Watch) -> None:
        """Once the run has ended: wait until every CPU's buffer has been read past this
        moment, so `watch.output` holds every event of the run the kernel kept, then
        close the watch. bpftrace dying first fails the run (the host's fault)."""
        marker = next(self._markers)
        try:
            marked = self._mark_every_cpu(marker)
            with self._changed:
                drained = self._changed.wait_for(
                    lambda: self._ended or marked <= self._marks.get(marker, set()),
                    DRAIN_TIMEOUT_S,
                )
                if self._ended and not marked <= self._marks.get(marker, set()):
                    raise InfrastructureError("bpftrace (the eBPF observer) died during the run")
                if not drained:
                    raise InfrastructureError("bpftrace did not hand over the run's events")
        finally:
            with self._changed:
                self._marks.pop(marker, None)
            self.forget(watch)

    def _mark_every_cpu(self, marker: int) -> set[int]:
        """Call the marker from every CPU this thread may run on (the runs' processes
        share the validator's cpuset), pinned to each in turn; the CPUs marked."""
        allowed = os.sched_getaffinity(0)
        marked: set[int] = set()
        try:
            for cpu in _online_cpus():
                try:
                    os.sched_setaffinity(0, {cpu})  # migrates this thread before it returns
                except OSError:
                    continue  # outside the cpuset: no run's process runs there either
                with contextlib.suppress(OSError):  # EINVAL: `which` is no real one
                    os.getpriority(self._marker_which, marker)
                marked.add(cpu)
        finally:
            os.sched_setaffinity(0, allowed)
        return marked

    def _read(self) -> None:
        """Hand each line to its run, as many as one read brought under one lock."""
        assert self.process.stdout is not None
        stdout, pending = self.process.stdout.fileno(), b""
        try:
            while chunk := os.read(stdout, _READ_BYTES):
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                with self._changed:
                    for line in lines:
                        self._take(line)
        finally:  # whatever ended the reading, the session's runs are failed, not hung
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def _take(self, line: bytes) -> None:
        """One JSON line of bpftrace's (the lock held)."""
        printed = _plain_printf(line)
        if printed is None:
            printed = self._parsed(line)
        if printed is None or not printed.startswith(self._prefix):
            return
        word, _, rest = printed[len(self._prefix) :].partition(b" ")
        if word.isdigit():
            owner = self._watches.get(int(word))
            if owner is not None:
                owner.write(self._prefix + rest)
        elif word == b"m":
            marker, _, cpu = rest.partition(b" ")
            self._marks.setdefault(int(marker), set()).add(int(cpu))
            self._changed.notify_all()
        elif word == b"ready\n":
            self._ready = True
            self._changed.notify_all()

    def _parsed(self, line: bytes) -> bytes | None:
        """A printf's output from a line JSON must decode; bpftrace's report of lost
        events marks every run watched now (whose they were is not known)."""
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict):
            return None
        if message.get("type") == "lost_events":
            for watch in self._watches.values():
                watch.lost = True
        data = message.get("data")
        if message.get("type") != "printf" or not isinstance(data, str):
            return None
        return _printed(data)

    def stop(self) -> None:
        """Kill bpftrace; the runs still watched then fail at their drain. Its exit waits
        on the kernel (its probes' detach: seconds on a busy host), so it is reaped, and
        its reader ends, off the caller's path. Once only, whoever calls it."""
        with self._changed:
            stopped, self._stopped = self._stopped, True
            self._ended = True  # no run waits on it any more
            self._changed.notify_all()
        if stopped:
            return
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        threading.Thread(target=self._reap, name="assay-ebpf-reap", daemon=True).start()
        shutil.rmtree(self._work, ignore_errors=True)

    def _reap(self) -> None:
        self.process.wait()
        self._reader.join()
        os.close(self._pidfd)
        assert self.process.stdout is not None
        self.process.stdout.close()


def _bpftrace_env() -> dict[str, str]:
    # Strings and buffers up to the program's CHUNK; a per-CPU buffer big enough for a
    # burst of opens (each ~10 lines) between two of bpftrace's reads.
    return {
        "BPFTRACE_STRLEN": "200",
        "BPFTRACE_PERF_RB_PAGES": "1024",
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
    }
