"""The validator's own tracer: strace outside the sandbox, and its output parsed.

strace runs with `--seccomp-bpf` (only the listed syscalls stop the tracee),
`-ff` (one file per process, so lines never interleave), `-xx` (every string in
hex, so nothing the traced program writes can inject structure into the log)
and `--decode-fds=socket` (a socket descriptor is printed with its protocol and
inode, `3<UDP:[4711]>`, which is how a `write` on a connected UDP socket is told
from a write to a file). Detonation adds `path` decoding: every descriptor
argument, `AT_FDCWD` included, is printed with the path the kernel holds for it,
and so is the descriptor an open returns. So a file is named by what the kernel
resolved, not by the string the program passed: an open relative to a handle on
`/`, through `/proc/self/root`, `//` or a symlink is reported at its target
(`assay.sandbox.paths` does the lexical part for calls that failed). A call that
prints no handle (`rename`, `unlink`) is relative to the working directory, which
the tracer follows through every `chdir` and `fchdir` (traced for that).

What is traced is the caller's choice (`TraceSet`): an agent's rep traces only
execs, connects, sends and writes, with short strings; detonation traces every
file, process and network event, failed attempts included. For a rep, only
calls that did what they claim are evidence: an exec that returned 0 (an i386
`int 0x80` exec killed by seccomp is printed with its syscall number as the
result), a send or write that returned a count on a real socket, to port 53 for
a DNS query (`sendto(-1, ...)` fails with EBADF and is none).

Parsing streams each process's file once, line by line, and keeps bounded
ordered sets: a line that cannot add to a list with room left is dropped by a
few substring tests, so a flood of calls costs the validator little more than
reading the trace; the summary is capped too (`TraceSummary.truncated`). What is
read is bounded as well: a trace past its cap only up to the cap (the tracer goes
on writing until the backend ends the run), and a long send or write line (an
iovec array prints up to a MiB) only at its head and end (`_LONG_LINE_HEAD`).

Which processes are the sandboxed tree (the chain `backend.py` draws): strace's
first child is the launcher, sh, which execs bubblewrap in the same process;
bubblewrap's one clone is the new namespaces' init, and that init's one fork
execs the command. So every other process file belongs to the command or its
descendants, and the command's own file counts from its exec on.
(Asking strace to translate pids across namespaces instead would cost ~35 ms a run.)
Which of those is the command is told by its first exec, never by its pid: pids
wrap (at 32768 on some hosts), so a child may have a lower pid than its parent.
It is the one process whose first exec, among bubblewrap's few setup lines, runs
the command's argv; a descendant may run that argv too, and then none of them is
(see `summarise`). The command's file is read first, so its exec is the first.
"""

from __future__ import annotations

import codecs
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from assay.sandbox.interface import (
    SANDBOX_INPUT_DIR,
    Executed,
    Link,
    Peer,
    TraceSet,
    TraceSummary,
)
from assay.sandbox.paths import fd_path, resolved

_EXEC = ("execve", "execveat")
_EXEC_BYTES = tuple(name.encode() for name in _EXEC)
_OPEN = ("open", "openat", "openat2", "creat")
_UNLINK = ("unlink", "unlinkat", "rmdir")
_RENAME = ("rename", "renameat", "renameat2")
_LINK = ("symlink", "symlinkat", "link", "linkat")
_SEND = ("sendto", "sendmsg", "sendmmsg")
_WRITE = ("write", "writev")  # a connected UDP socket's DNS query (Go's resolver)
_CONNECT = ("connect",)
# A relative path of a call that prints no directory handle (rename, unlink, open) is
# resolved against the working directory these set (the next `AT_FDCWD<...>` corrects it).
_CHDIR = ("chdir", "fchdir")
_FORK = ("clone",)  # how bubblewrap starts its namespace init (recognised as setup)
# strace steps a new process through every syscall (two stops each) until its first
# traced one, since it cannot know the process inherited its seccomp filter. These
# come first in new processes, so tracing them ends that early: set_robust_list is
# the first call of every glibc fork() child and thread, and dup2 comes in the first
# few of a Python subprocess child (its output redirected), before it resets every
# signal. Their lines are no evidence; the summary ignores them.
_ENDS_STEPPING = ("set_robust_list", "dup2")
_FILE_CALLS = _OPEN + _UNLINK + _RENAME + _LINK
_NETWORK = _CONNECT + _SEND + _WRITE
_ONE_BUFFER = ("sendto", "write")
_SEND_OR_WRITE = tuple(f"{name}(" for name in _SEND + _WRITE)
# A call's name and first argument, where strace names a socket's protocol and, once it
# is connected, its two addresses (IPv6 ones included).
_FD_HEAD = 160
_SOCKADDRS_SEEN = 4096  # distinct printed addresses parsed, at most
_WRITE_FLAGS = re.compile("O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")
# Read-only opens under these are the runtime loading itself (shared libraries,
# the Python standard library, /proc, the validator's own inputs): public, and
# hundreds per run. What in /proc tells a sandbox from a host is a probe instead.
_QUIET_READ_PREFIXES = (
    "/usr/",
    "/lib",
    "/etc/ld.so.cache",
    "/proc/",
    "/dev/",
    f"{SANDBOX_INPUT_DIR}/",
)
# Where a program reads that it is sandboxed: the Seccomp and NoNewPrivs fields of a
# process's status. (Boot time and uptime agree with a shifted clock: the backend
# shows /proc/stat's boot time shifted with it.)
_FINGERPRINTS = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/status")
# One process failing the same call on the same path this often, or finding this many
# names of one directory missing, is timing the tracer (a traced call costs far more
# than an untraced one), not looking for a file. Detonating the bundled corpus and
# corpus-real's benign packages, no process of a sample, its installer or its runtime
# failed one call on one path more than 16 times (setuptools reading a missing
# entry_points.txt), or on more than 13 names of one directory. Only missing names
# count toward the second (a build walking a tree fails to open each file as a
# directory), and paths under the quiet prefixes toward neither (the loader's and the
# compiler's searches try many names there).
_PROBE_REPEATS = 48
_PROBE_NAMES = 48
_FAILURES_KEPT = 4096  # distinct failing calls counted per process, at most
WRITERS_KEPT = 8192  # (path, writer) pairs kept: an installer writes thousands
# strace prints paths whole (up to 4 KiB) whatever its string limit; the summary keeps this much.
_PATH_CHARS = 512
# Bubblewrap's traced calls in the command's process, before its exec, are fewer.
_SETUP_LINES = 256
_SETUP_BYTES = 64 * 1024
_BATCH_BYTES = 1 << 16
# Of a longer send or write line (an iovec array: a MiB printed), what is read: its head,
# with the call, its descriptor, its address and its first buffers (a DNS query's, if it
# is one, come first), and its end, with the result. Its middle is more buffers.
_LONG_LINE_HEAD = 1 << 16
_LONG_LINE_END = 1 << 10
_CUT_LINES = tuple(f"{name}(".encode() for name in ("write", "writev", "sendto", "sendmsg"))
_ELIDED = b" {...} "  # where a long line's middle was; no address or string spans it
# errno of a send or connect that never reached a socket: no attempt at all.
_NOT_A_SOCKET = ("-1 EBADF", "-1 ENOTSOCK", "-1 EFAULT")


@dataclass(frozen=True)
class TraceProfile:
    """How one `TraceSet` is traced and summarised."""

    syscalls: tuple[str, ...]
    string_bytes: int  # strace -s: each string, and each array, is cut to this many
    successful_only: bool  # strace prints only calls that succeeded
    summary_items: int  # per list of the summary
    summary_chars: int  # over all strings of the summary
    read_over_cap: bool  # whether a trace that outgrew its cap is still summarised
    decode_fds: str = "socket"  # what strace prints beside a descriptor


PROFILES = {
    # Enough for the probe's DNS query (< 100 bytes) and echo token; an argv
    # or iovec array prints at most 256 x 256 bytes.
    TraceSet.LIVENESS: TraceProfile(
        syscalls=_EXEC + _CONNECT + _SEND + _WRITE + _FORK + _ENDS_STEPPING,
        string_bytes=256,
        successful_only=True,
        summary_items=64,
        summary_chars=32 * 1024,
        read_over_cap=False,  # the rep fails at the cap, whatever its trace shows
    ),
    # Any DNS query (< 512 bytes), and argv strings long enough to show a canary.
    TraceSet.FULL: TraceProfile(
        syscalls=(
            *(_EXEC + _FILE_CALLS + _CHDIR + _CONNECT + _SEND + _WRITE + _FORK),
            *_ENDS_STEPPING,
        ),
        string_bytes=512,
        successful_only=False,
        summary_items=1024,
        summary_chars=1 << 20,
        read_over_cap=True,  # what was seen before the cap is still evidence
        decode_fds="path,socket",
    ),
}


def strace_argv(out_prefix: Path, trace_set: TraceSet) -> list[str]:
    profile = PROFILES[trace_set]
    argv = ["strace", "-ff", "--seccomp-bpf", "-qq", "-xx", f"-s{profile.string_bytes}"]
    argv += [f"--decode-fds={profile.decode_fds}", "-e", "signal=none"]
    if profile.successful_only:
        argv.append("--status=successful")
    return [*argv, "-e", "trace=" + ",".join(profile.syscalls), "-o", str(out_prefix)]


@dataclass(frozen=True)
class Call:
    """A function-like token in strace output, e.g. htons(53) or inet_addr("...")."""

    name: str
    args: tuple[object, ...]


@dataclass(frozen=True)
class Event:
    syscall: str
    args: tuple[object, ...]
    result: str


# One token of strace's argument grammar. With -xx every string is \\xNN pairs, so
# no quote, bracket or comma inside a string can be mistaken for structure.
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>@?"(?P<hex>(?:\\x[0-9a-f]{2})*)"(?:\.\.\.)?)
      | (?P<comment>/\*.*?\*/)
      | (?P<punct>[\[\]{}(),=])
      | (?P<bare>[^\s\[\]{}(),="]+)
    )""",
    re.VERBOSE,
)


class _Parser:
    """Recursive descent over one strace argument list (nesting is strace's, a few levels)."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str, int]] = []
        for m in _TOKEN.finditer(text):
            kind = m.lastgroup if m.lastgroup != "hex" else "string"
            if kind != "comment":
                value = m["hex"] if kind == "string" else m[kind or "bare"]
                self.tokens.append((kind or "bare", value, m.end()))
        self.i = 0

    def _next(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def _peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def items(self, close: str) -> tuple[list[object], int]:
        """Values up to the matching `close`, and the text offset just past it."""
        out: list[object] = []
        while True:
            kind, value, end = self._next()
            if kind == "punct" and value == close:
                return out, end
            if kind == "punct" and value == ",":
                continue
            self.i -= 1
            out.append(self.value())

    def value(self) -> object:
        kind, value, _ = self._next()
        if kind == "string":
            return bytes.fromhex(value.replace("\\x", ""))
        if value == "[":
            return self.items("]")[0]
        if value == "{":
            return self._struct(self.items("}")[0])
        if kind != "bare":
            raise ValueError(f"unexpected {value!r}")
        # A bare word may be several (e.g. "0x55 /* 3 vars */" lost its comment) or
        # followed by a call's arguments or a struct field's value.
        while self.i < len(self.tokens) and self.tokens[self.i][0] == "bare":
            value += " " + self._next()[1]
        if self._peek() == "(":
            self.i += 1
            return Call(value, tuple(self.items(")")[0]))
        if self._peek() == "=":
            self.i += 1
            return (value, self.value())
        return value

    @staticmethod
    def _struct(items: list[object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for n, item in enumerate(items):
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                out[item[0]] = item[1]
            else:
                out[f"_{n}"] = item
        return out


_LINE = re.compile(r"^(?P<name>[a-z0-9_]+)\((?P<rest>.*)$")


def parse_line(line: str) -> Event | None:
    """One strace line as an event, or None for signals, exits and partial lines."""
    m = _LINE.match(line)
    if m is None:
        return None
    rest = m["rest"]
    try:
        args, end = _Parser(rest).items(")")
    except (ValueError, IndexError):
        return None
    result = rest[end:].strip().removeprefix("=").strip()
    return Event(m["name"], tuple(args), result)


def decode_dns_query(payload: bytes) -> str | None:
    """The first question name of a DNS query packet (UDP, or TCP with its length prefix)."""
    for candidate in (payload, payload[2:]):
        name = _question_name(candidate)
        if name is not None:
            return name
    return None


def _question_name(packet: bytes) -> str | None:
    if len(packet) < 17 or packet[2] & 0x80 or int.from_bytes(packet[4:6], "big") == 0:
        return None  # too short, a response, or no question
    labels: list[str] = []
    i = 12
    while i < len(packet):
        length = packet[i]
        if length == 0:
            if i + 5 > len(packet) or not labels:
                return None
            return ".".join(labels)
        if length > 63:
            return None
        label = packet[i + 1 : i + 1 + length]
        if len(label) != length or not all(33 <= b < 127 for b in label):
            return None
        labels.append(label.decode("ascii"))
        i += 1 + length
    return None


def _text(value: object) -> str:
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


def _hex_bytes(hexed: str) -> bytes:
    # The runtime's escape decoder reads \xNN in one pass; removing each "\x" to hand
    # the digits to bytes.fromhex copies the text and costs several times more.
    return codecs.escape_decode(hexed)[0]


# Lines are read as strace wrote them: with -xx every string is "\xNN..." (no
# quote, brace or bracket inside), so these patterns cannot be steered by data.
_STRING = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
_SOCKADDR = re.compile(r"\{sa_family=AF_(\w+)([^{}]*)\}")
_PORT = re.compile(r"sin6?_port=htons\((\d+)\)")
_INET = re.compile(r'inet_(?:addr|pton)\((?:AF_INET6?, )?"((?:\\x[0-9a-f]{2})*)"')
_SUN_PATH = re.compile(r'sun_path=@?"((?:\\x[0-9a-f]{2})*)"')
_NL_PID = re.compile(r"nl_pid=(-?\d+)")
_MIN_DNS_HEX = 17 * 4  # a DNS query is at least 17 bytes


def _result(line: str) -> str:
    return line.rpartition(") = ")[2].strip()


def _succeeded(line: str) -> bool:
    """Whether a call returned 0 (a short line's result is padded: `chdir("...")   = 0`)."""
    call, _, result = line.rpartition(" = ")
    return result.strip() == "0" and call.rstrip().endswith(")")


def _count(result: str) -> int | None:
    """The non-negative count a call returned, None when it failed or never returned."""
    head = result.split(" ", 1)[0]
    return int(head) if head.isdigit() else None


def _sockaddrs(line: str) -> Iterator[str]:
    """The text of each socket address a call names (no braces nest inside one)."""
    start = line.find("{sa_family=")
    while start >= 0:
        end = line.find("}", start)
        if end < 0:
            return
        yield line[start : end + 1]
        start = line.find("{sa_family=", end)


def _peer(sockaddr: str) -> Peer | None:
    m = _SOCKADDR.fullmatch(sockaddr)
    if m is None:
        return None
    family, body = m[1].lower(), m[2]
    port = _PORT.search(body)
    address = _INET.search(body) or _SUN_PATH.search(body)
    if address is not None:
        text = _text(_hex_bytes(address[1]))
    else:
        netlink = _NL_PID.search(body)
        text = netlink[1] if netlink else ""
    return Peer(family, text, int(port[1]) if port else None)


def _dns_in(name: str, line: str) -> Iterator[str]:
    """Query names in the data a call carried (addresses are not data).

    `sendto` and `write` carry one buffer, their first string. Otherwise each
    buffer is tried alone, and all of them joined: a packet may be split over
    the buffers of one writev or sendmsg.
    """
    if name in _ONE_BUFFER:
        start = line.find('"') + 1
        end = line.find('"', start)
        data = [line[start:end]] if 0 < start <= end else []
    else:
        data = [m[1] for m in _STRING.finditer(_SOCKADDR.sub("", line))]
        if len(data) > 1:
            data.append("".join(data))
    for hexed in data:
        if len(hexed) >= _MIN_DNS_HEX:
            query = decode_dns_query(_hex_bytes(hexed))
            if query is not None:
                yield query


class _Collector:
    """The summary under construction: ordered sets, each capped, and a size budget.

    Lines are looked at in order of cost: a line that cannot add to a list that
    still has room is dropped by a few string tests, before any parsing, so a
    flood of calls costs the validator little more than reading its lines.
    """

    _KINDS = (
        *("execs", "executed", "reads", "writes", "unlinks", "renames", "links"),
        *("connects", "dns", "probes"),
    )

    def __init__(self, profile: TraceProfile) -> None:
        self.profile = profile
        self.found: dict[str, dict[object, None]] = {kind: {} for kind in self._KINDS}
        self.room = profile.summary_chars
        self.truncated = False
        # Inodes of the sockets whose last successful connect was to port 53.
        self.dns_sockets: set[str] = set()
        self.sockaddrs: set[str] = set()  # as printed, each parsed once
        self.cwd: str | None = None  # of the process being read, as last printed
        self.skip_files = False  # the process being read is the caller's harness
        self.cwd_hex = ""  # as printed, decoded on demand
        self.program: tuple[str, ...] = ()  # the argv the process being read last ran
        self.writers: dict[tuple[str, tuple[str, ...]], None] = {}
        self.failures: dict[str, int] = {}  # of the process being read, by call text
        self.names_failed: dict[str, int] = {}  # and by call text less the path's last name

    def start_process(self, skip_files: bool = False) -> None:
        """The lines that follow are another process's (`skip_files`: whose file
        calls are none of the summary's)."""
        self.cwd = None
        self.cwd_hex = ""
        self.program = ()
        self.failures = {}
        self.names_failed = {}
        self.skip_files = skip_files

    def _full(self, kind: str) -> bool:
        if len(self.found[kind]) >= self.profile.summary_items or self.room <= 0:
            self.truncated = True
            return True
        return False

    def _add(self, kind: str, item: object, size: int) -> None:
        bucket = self.found[kind]
        if item in bucket:
            return
        if len(bucket) >= self.profile.summary_items or size > self.room:
            self.truncated = True
            return
        bucket[item] = None
        self.room -= size

    def feed_all(self, lines: list[str]) -> None:
        if self._peers_settled():
            # Once no send can add a peer, a send or write is evidence only as a DNS
            # query: to port 53, or unaddressed on a UDP socket (connected to 53 or
            # not). The rest are dropped by these tests alone, without a call per line.
            writes = bool(self.dns_sockets)
            lines = [
                line
                for line in lines
                if not line.startswith(_SEND_OR_WRITE)
                or "htons(53)" in line
                or (writes and "sa_family=" not in line and "<UDP" in line[:_FD_HEAD])
            ]
        for line in lines:
            self.feed(line)

    def _peers_settled(self) -> bool:
        """Whether an addressed send can no longer change the summary (the peer
        list, or what may still be parsed for it, is spent and marked truncated)."""
        return self.truncated and (
            len(self.found["connects"]) >= self.profile.summary_items
            or len(self.sockaddrs) >= _SOCKADDRS_SEEN
            or self.room <= 0
        )

    def feed(self, line: str) -> None:
        name = line[: line.find("(")]
        if name in _NETWORK:
            self._network(name, line)
        elif name in _EXEC:
            if line.rstrip().endswith(") = 0") and not self._full("execs"):
                self._exec(line)
        elif name in _FILE_CALLS and not self.skip_files:
            self._file(name, line)
        elif name in _CHDIR and _succeeded(line):
            self._chdir(name, line)

    def _chdir(self, name: str, line: str) -> None:
        """The working directory a successful chdir or fchdir set."""
        if name == "fchdir":
            opened = line.find("<")
            decoded = _hex_run(line[opened + 1 : line.find(">", opened)]) if opened > 0 else None
            self.cwd = _text(decoded) if decoded is not None else None
        else:
            named = self._named(line)
            self.cwd = named[0] if named and named[0].startswith("/") else None
        self.cwd_hex = ""  # whatever `AT_FDCWD<...>` prints next is news

    def _written(self, path: str) -> None:
        """`path` written, renamed or removed by the process being read (beyond the
        summary's room: a path without a known writer is nobody's to discount)."""
        if len(self.writers) < WRITERS_KEPT:
            self.writers.setdefault((path, self.program), None)

    def _exec(self, line: str) -> None:
        event = parse_line(line)
        named = self._named(line)
        if event is not None and named:
            argv = _argv(event)
            self.program = argv
            self._add("execs", argv, sum(map(len, argv)) + 1)
            self._add("executed", Executed(named[0], argv), sum(map(len, argv)) + len(named[0]))

    def _named(self, line: str) -> list[str]:
        """The paths a call names, each made absolute against the directory it was
        passed with (its handle's path, or the working directory last printed)."""
        self._track_cwd(line)
        out = []
        for handle, data in _named_strings(line, 4 * _PATH_CHARS):
            directory = self.cwd
            if handle is not None and handle != self.cwd_hex:  # the cwd is decoded once
                decoded = _hex_run(handle)
                directory = _text(decoded) if decoded is not None else self.cwd
            out.append(resolved(_text(data), directory))
        return out

    def _track_cwd(self, line: str) -> None:
        """The working directory, from the `AT_FDCWD<...>` a call printed."""
        cwd_at = line.find("AT_FDCWD<")
        if cwd_at >= 0:
            printed = line[cwd_at + 9 : line.find(">", cwd_at)]
            if printed != self.cwd_hex:
                self.cwd_hex, self.cwd = printed, _text(_hex_bytes(printed))

    def _file(self, name: str, line: str) -> None:
        # Ordered so that a flood of calls whose list is full costs a few string tests
        # and a count, never a decoding.
        result = _result(line)
        self._track_cwd(line)
        if name in _OPEN:
            self._open(name, line, result)
            return
        if result.startswith("-1 "):
            self._failed(name, line)
        if name in _LINK:
            if result == "0" and not self._full("links"):
                named = self._named(line)
                if len(named) == 2:
                    self._link(name, line, named)
            return
        kind = "unlinks" if name in _UNLINK else "renames"
        if self._full(kind):
            return
        named = self._named(line)
        if not named:
            return
        if kind == "unlinks":
            self._add(kind, named[0], len(named[0]))
            self._written(named[0])
        elif len(named) == 2:
            self._add(kind, (named[0], named[1]), len(named[0]) + len(named[1]))
            self._written(named[0])
            self._written(named[1])

    def _open(self, name: str, line: str, result: str) -> None:
        flags = line.rpartition('"')[2]  # the path is the last string; flags follow it
        writing = name == "creat" or _WRITE_FLAGS.search(flags) is not None
        opened = _opened_hex(result)
        if not writing and _plainly_quiet(opened or line[line.find('"') + 1 :]):
            return  # the runtime loading itself
        if result.startswith("-1 "):
            self._failed(name, line)
        probe = opened is not None and opened.startswith(_PROC_HEX)
        if self._full("writes" if writing else "reads") and not probe:
            return
        named = self._named(line)
        if not named:
            return
        path = fd_path(_text(_hex_bytes(opened))) if opened else named[-1]
        if writing:
            if not self._full("writes"):
                self._add("writes", path, len(path))
                self._written(path)
        elif _FINGERPRINTS.fullmatch(path):
            shown = re.sub(r"^/proc/\d+/", "/proc/<pid>/", path)
            self._add("probes", f"read {shown}", len(shown) + 5)
        elif not path.startswith(_QUIET_READ_PREFIXES) and not self._full("reads"):
            self._add("reads", path, len(path))

    def _link(self, name: str, line: str, named: list[str]) -> None:
        """A hard link names an existing file; a symlink's target, written as the
        call's first string, is resolved from the link's own directory."""
        path, hard = named[1], name.startswith("link")
        if hard:
            target = named[0]
        else:
            written = _text(
                _hex_bytes(line[line.find('"') + 1 : line.find('"', line.find('"') + 1)])
            )
            target = resolved(written, posixpath.dirname(path))
        self._add("links", Link(path, target, hard), len(path) + len(target))

    def _failed(self, name: str, line: str) -> None:
        """Count a failed call by its arguments as printed, and by them less the path's
        last name: the same one repeated, or the same call finding names varied in one
        directory missing, is a timing probe (only then is its path decoded)."""
        key = line[: line.rfind(") = ")]
        count = self.failures.get(key, 0) + 1
        if count == 1 and len(self.failures) >= _FAILURES_KEPT:
            return
        self.failures[key] = count
        if count == _PROBE_REPEATS:
            self._probe(name, line, f"{_PROBE_REPEATS}+ failed {{call}} calls on {{path}}")
        if count == 1 and _missing(line, len(key)):
            group = _less_last_name(key)
            names = self.names_failed.get(group, 0) + 1
            self.names_failed[group] = names
            if names == _PROBE_NAMES:
                text = f"failed {{call}} calls on {_PROBE_NAMES}+ names in {{directory}}/"
                self._probe(name, line, text)

    def _probe(self, name: str, line: str, text: str) -> None:
        named = self._named(line)
        path = named[-1] if named else "?"
        call = f"{name.removesuffix('at')}()"
        shown = text.format(call=call, path=path, directory=posixpath.dirname(path))
        self._add("probes", shown + " in one process", len(shown) + 15)

    def _network(self, name: str, line: str) -> None:
        # Ordered so that, once the peer list is full, a send that is not to port 53
        # costs two substring tests.
        if name == "connect":
            self._connect(line)
        addressed = "sa_family=" in line
        if addressed:
            if len(self.found["connects"]) < self.profile.summary_items:
                self._add_peers(line)
            else:
                self.truncated = True
            if name == "connect" or "htons(53)" not in line:
                return
        elif name == "connect" or not self._on_dns_socket(line):
            return  # a write to a file or pipe, or a send on a socket not connected to 53
        count = _count(_result(line))
        if count is not None and (count > 0 or name != "sendmmsg") and not self._full("dns"):
            for query in _dns_in(name, line):
                self._add("dns", query, len(query))

    def _on_dns_socket(self, line: str) -> bool:
        """Whether the call's first argument is a UDP socket connected to port 53: strace
        names a connected socket by its addresses (`3<UDP:[10.0.0.2:4711->10.0.0.1:53]>`),
        or by its inode where it cannot look the socket up (then its connect said)."""
        socket = _udp_socket(line)
        if socket is None:
            return False
        _, arrow, peer = socket.partition("->")
        return peer.endswith(":53") if arrow else socket in self.dns_sockets

    def _connect(self, line: str) -> None:
        inode = _udp_socket(line)
        if inode is not None and _count(_result(line)) == 0:
            if "htons(53)" in line:
                self.dns_sockets.add(inode)
            else:
                self.dns_sockets.discard(inode)

    def _add_peers(self, line: str) -> None:
        result = _result(line)
        if _count(result) is None and result.startswith(_NOT_A_SOCKET):
            return
        for sockaddr in _sockaddrs(line):
            if sockaddr in self.sockaddrs:
                continue
            if len(self.sockaddrs) >= _SOCKADDRS_SEEN:
                self.truncated = True
                return
            self.sockaddrs.add(sockaddr)
            peer = _peer(sockaddr)
            if peer is not None:
                self._add("connects", peer, len(peer.address) + 16)

    def summary(self) -> TraceSummary:
        found = self.found
        return TraceSummary(
            execs=tuple(found["execs"]),  # type: ignore[arg-type]
            executed=tuple(found["executed"]),  # type: ignore[arg-type]
            reads=tuple(found["reads"]),  # type: ignore[arg-type]
            writes=tuple(found["writes"]),  # type: ignore[arg-type]
            unlinks=tuple(found["unlinks"]),  # type: ignore[arg-type]
            renames=tuple(found["renames"]),  # type: ignore[arg-type]
            links=tuple(found["links"]),  # type: ignore[arg-type]
            probes=tuple(found["probes"]),  # type: ignore[arg-type]
            connects=tuple(found["connects"]),  # type: ignore[arg-type]
            dns_queries=tuple(found["dns"]),  # type: ignore[arg-type]
            written_by=tuple(self.writers),
            truncated=self.truncated,
        )


def _hex_run(text: str) -> bytes | None:
    """The bytes `text` prints if it is whole \\xNN pairs, as -xx prints a string's bytes,
    else None. The pairs' places are tested by slices (a regular expression's repeated
    group costs several times more per pair), their digits by decoding them."""
    pairs = len(text) // 4
    if len(text) % 4 or text[::4] != "\\" * pairs or text[1::4] != "x" * pairs:
        return None
    try:
        return _hex_bytes(text)
    except ValueError:  # a pair that is not two hex digits
        return None


def _named_strings(line: str, chars: int) -> Iterator[tuple[str | None, bytes]]:
    """Each string argument of a line, decoded from its first `chars` printed, with what is
    printed of the descriptor just before it (a directory handle or AT_FDCWD: `<\\x2f...>,
    "..."`; its path if it is whole \\xNN pairs) when there is one. With -xx neither can
    hold a quote or an angle bracket of its own, so each is found by searching for those
    characters, and only the part kept is checked (a path can be 4 KiB, 16 KiB printed,
    in every line of a flood)."""
    start = line.find('"')
    while start >= 0:
        end = line.find('"', start + 1)
        if end < 0:
            return
        data = _hex_run(line[start + 1 : min(end, start + 1 + chars)])
        if data is None:
            start = end  # not a string: its closing quote may open one
            continue
        handle = None
        if start >= 3 and line.startswith(">, ", start - 3):
            opened = line.rfind("<", 0, start - 3)
            handle = line[opened + 1 : start - 3] if opened >= 0 else None
        yield handle, data
        start = line.find('"', end + 1)


def _opened_hex(result: str) -> str | None:
    """The hex path of the descriptor an open returned (`3<\\x2f...>`), None when it failed."""
    head, _, rest = result.partition("<")
    return rest.rpartition(">")[0] if rest and head.isdigit() else None


def _missing(line: str, result_at: int) -> bool:
    """Whether a call failed with ENOENT (its result follows `result_at`)."""
    return line.startswith(") = -1 ENOENT", result_at)


def _less_last_name(call: str) -> str:
    """A call as printed with the last name of its last string (an open's path) cut."""
    end = call.rfind('"')
    start = call.rfind('"', 0, end)
    cut = call.rfind(_SLASH_HEX, start, end)
    return call[: max(cut, start + 1)] + call[end:]


def _plainly_quiet(hexed: str) -> bool:
    """Whether a path (as printed, from its start) is under a quiet prefix with nothing
    the kernel would resolve elsewhere: this test alone drops the runtime's hundreds
    of loads, before any decoding."""
    return (
        hexed.startswith(_QUIET_READ_HEX)
        and not hexed.startswith(_PROC_HEX)
        and _DOTDOT_HEX not in hexed
        and _SLASHES_HEX not in hexed
    )


def _udp_socket(line: str) -> str | None:
    """How strace names the UDP socket a call's first argument is: its inode
    (`3<UDP:[4711]>`), or its addresses once connected (`local->peer`)."""
    head = line[:_FD_HEAD]
    start = head.find("<UDP")
    if start < 0:
        return None
    end = head.find("]>", start)
    return head[head.find(":[", start) + 2 : end] if end > 0 else None


_HEX_BYTE = tuple(f"\\x{b:02x}" for b in range(256))


def _hexed(data: bytes) -> str:
    """Bytes as strace -xx prints them inside a string (no quotes)."""
    return "".join(map(_HEX_BYTE.__getitem__, data))


_QUIET_READ_HEX = tuple(_hexed(p.encode()) for p in _QUIET_READ_PREFIXES)
_PROC_HEX = _hexed(b"/proc/")
_DOTDOT_HEX = _hexed(b"/..")
_SLASHES_HEX = _hexed(b"//")
_SLASH_HEX = _hexed(b"/")


def _argv(event: Event) -> tuple[str, ...]:
    return tuple(_text(a) for a in next((a for a in event.args if isinstance(a, list)), []))


def _exec_line_prefix(argv: Iterable[str], limit: int) -> str:
    """How strace prints the start of an execve of `argv`, up to where it may cut.

    Each string is cut at `limit` bytes (then printed without its closing
    quote here), so the prefix holds whatever part strace printed in full.
    """
    args = [a.encode() for a in argv]
    parts = [f'"{_hexed(a[:limit])}' + ('"' if len(a) <= limit else "") for a in args]
    return f"execve({parts[0]}, [{', '.join(parts)}"


def _process_files(out_prefix: Path) -> dict[int, Path]:
    files: dict[int, Path] = {}
    for path in out_prefix.parent.glob(out_prefix.name + ".*"):
        suffix = path.name.rsplit(".", 1)[1]
        if suffix.isdigit():
            files[int(suffix)] = path
    return files


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="ascii", errors="replace") as handle:
        yield from handle


def _batches(path: Path, limit: int) -> Iterator[list[str]]:
    """A process's lines in its first `limit` bytes, without their newlines, a batch at
    a time (the runtime splits them, not a Python loop). A line the limit cuts is left
    out; a last line strace never finished (killed mid-write) is kept as it is."""
    with path.open("rb") as handle:
        pending = _Pending()
        while limit > 0 and (chunk := handle.read(min(_BATCH_BYTES, limit))):
            limit -= len(chunk)
            end = chunk.rfind(b"\n") + 1
            if not end:
                pending.add(chunk)
                continue
            lines = _split(chunk[:end].decode("ascii", "replace"))
            lines[0] = pending.line(chunk[: chunk.find(b"\n")])
            yield lines
            pending.add(chunk[end:])
        if not handle.read(1) and (last := pending.line(b"")):
            yield [last]


def _split(text: str) -> list[str]:
    """The lines of `text`, which ends with a newline. Long lines are found by searching
    for their ends, which the runtime does a word at a time; `str.split` tests every
    character, cheaper only for short lines (an open's line is up to 16 KiB printed)."""
    lines: list[str] = []
    start = 0
    while len(lines) < 8:
        end = text.find("\n", start)
        lines.append(text[start:end])
        start = end + 1
        if start == len(text):
            return lines
    return lines + text[start:-1].split("\n")


class _Pending:
    """The start of a line whose end is not read yet: all of it, or of a long send or
    write (see _LONG_LINE_HEAD), its head and its last bytes."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0
        self.cut: bool | None = None  # whether its middle is skipped, once it is long
        self.end = b""  # of a long send or write, the last bytes read

    def add(self, chunk: bytes) -> None:
        if self.size >= _LONG_LINE_HEAD and self.cut is None:
            self.cut = b"".join(self.pieces)[:16].startswith(_CUT_LINES)
        if self.cut:
            self.end = (self.end + chunk)[-_LONG_LINE_END:]
        else:
            self.pieces.append(chunk)
            self.size += len(chunk)

    def line(self, rest: bytes) -> str:
        """The line, ending with `rest`; the next one starts empty."""
        if self.end:
            end = (self.end + rest)[-_LONG_LINE_END:]
            text = b"".join([*self.pieces, _ELIDED, end])
        else:
            text = b"".join([*self.pieces, rest])
        self.pieces, self.size, self.cut, self.end = [], 0, None, b""
        return text.decode("ascii", "replace")


def _read_limits(files: dict[int, Path], budget: int | None) -> dict[int, int]:
    """How many bytes of each process's file to read: all of them while they fit in
    `budget`; past it, the longest files are cut to one length, the most that lets
    every file have as much (so a flood in one process leaves the others whole)."""
    sizes = {pid: path.stat().st_size for pid, path in files.items()}
    if budget is None or sum(sizes.values()) <= budget:
        return sizes
    left, ordered = budget, sorted(sizes.values())
    for n, size in enumerate(ordered):
        share = left // (len(ordered) - n)
        if size > share:
            break
        left -= size
    return {pid: min(size, share) for pid, size in sizes.items()}


def _after_first_exec(batches: Iterator[list[str]]) -> Iterator[list[str]]:
    """The command's batches of lines from its exec on (before it, the process was
    bubblewrap's: `_starts_with_exec_of` found that exec among a few lines)."""
    for batch in batches:
        for n, line in enumerate(batch):
            if line.startswith(_EXEC):
                yield batch[n:]
                yield from batches
                return


def _starts_with_exec_of(path: Path, marker: bytes, limit: int) -> bool:
    """Whether a process's first exec, within bubblewrap's setup head (of its first
    `limit` bytes), starts with `marker` and returned 0. Only that head is read: a
    process that did more before its first exec is no command's."""
    with path.open("rb") as handle:
        head = handle.read(min(limit, _SETUP_BYTES + len(marker)))
    offset = 0
    for line in head.split(b"\n", _SETUP_LINES)[:_SETUP_LINES]:
        if offset >= _SETUP_BYTES:
            return False
        if line.startswith(_EXEC_BYTES):
            return line.startswith(marker) and line.rstrip().endswith(b") = 0")
        offset += len(line) + 1
    return False


def _setup_pids(files: dict[int, Path], launcher: tuple[str, ...], limit: int) -> set[int]:
    """The launcher's process and the namespace init it cloned.

    The launcher's argv (its random run paths in the first `limit` bytes of
    its script) cannot be forged from inside the sandbox.
    """
    marker = _exec_line_prefix(launcher[:3], limit)
    for pid, path in files.items():
        lines = _lines(path)
        if next(lines, "").startswith(marker):
            forks = (_result(line) for line in lines if line.startswith(_FORK))
            return {pid, *(int(child) for child in forks if child.isdigit())}
    return set()


def summarise(
    out_prefix: Path,
    launcher: Iterable[str],
    command: Iterable[str],
    trace_set: TraceSet = TraceSet.FULL,
    harness_command: bool = False,
    read_bytes: int | None = None,
) -> TraceSummary:
    """Events of the sandboxed command (from its exec on) and all its descendants.

    `harness_command`: the command is the caller's harness, so its own file calls
    are left out (its exec and network calls, and all its descendants', stay in).
    The command is the one process that starts by exec'ing its argv. A descendant
    that does so too cannot be told from it (pids wrap, so neither is surely the
    first), and then each of them is counted whole, from its first line: whatever
    looks like the harness is the subject's. Processes that start with that exec
    are read first, so the command's exec is the summary's first.
    `read_bytes`: the most of the command's trace that is read (a trace past its cap
    is read up to the cap, however far past it the tracer wrote before the run ended).
    """
    profile = PROFILES[trace_set]
    files = _process_files(out_prefix)
    setup = _setup_pids(files, tuple(launcher), profile.string_bytes)
    limits = _read_limits(
        {pid: path for pid, path in files.items() if pid not in setup}, read_bytes
    )
    marker = _exec_line_prefix(tuple(command), profile.string_bytes).encode()
    starts = {pid for pid in limits if _starts_with_exec_of(files[pid], marker, limits[pid])}
    command_pid = next(iter(starts)) if len(starts) == 1 else None
    collector = _Collector(profile)
    for pid in sorted(limits, key=lambda pid: (pid not in starts, pid)):
        batches = _batches(files[pid], limits[pid])
        if pid == command_pid:
            batches = _after_first_exec(batches)
        collector.start_process(skip_files=harness_command and pid == command_pid)
        for batch in batches:
            collector.feed_all(batch)
    return collector.summary()
