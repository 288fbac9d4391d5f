"""The validator's own tracer: strace outside the sandbox, and its output parsed.

strace runs with `--seccomp-bpf` (only the listed syscalls stop the tracee),
`-ff` (one file per process, so lines never interleave), `-xx` (every string in
hex, so nothing the traced program writes can inject structure into the log)
strings in hex, so nothing the traced program writes can inject structure into
the log).

Which processes are the sandboxed tree: strace's first child is the launcher
(sh → setpriv → bwrap), its one clone is bubblewrap's namespace init, and that
init's one fork becomes the command. So every other process file belongs to the
command or its descendants, and the command's own file counts from its exec on.
(Asking strace to translate pids across namespaces instead would cost ~35 ms a run.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from assay.sandbox.interface import SANDBOX_INPUT_DIR, Peer, TraceSummary

_EXEC = ("execve", "execveat")
_OPEN = ("open", "openat", "openat2", "creat")
_UNLINK = ("unlink", "unlinkat", "rmdir")
_RENAME = ("rename", "renameat", "renameat2")
_SEND = ("connect", "sendto", "sendmsg", "sendmmsg")
_FORK = ("clone",)  # how bubblewrap starts its namespace init (recognised as setup)
TRACED_SYSCALLS = _EXEC + _OPEN + _UNLINK + _RENAME + _SEND + _FORK
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
# Read-only opens under these are the runtime loading itself (shared libraries,
# the Python standard library, /proc/self, the validator's own inputs): public,
# and hundreds per run.
_QUIET_READ_PREFIXES = (
    "/usr/",
    "/lib",
    "/etc/ld.so.cache",
    "/proc/self/",
    "/dev/",
    f"{SANDBOX_INPUT_DIR}/",
)
STRING_CAP = 4096  # bytes of each string argument strace prints (DNS packets are < 512)


def strace_argv(out_prefix: Path) -> list[str]:
    return [
        "strace",
        "-ff",
        "--seccomp-bpf",
        "-qq",
        "-xx",
        f"-s{STRING_CAP}",
        "-e",
        "signal=none",
        "-e",
        "trace=" + ",".join(TRACED_SYSCALLS),
        "-o",
        str(out_prefix),
    ]


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


def _text(value: object) -> str:
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


def _ok(result: str) -> bool:
    return result[:1].isdigit()


def _walk(value: object) -> Iterator[object]:
    yield value
    if isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, Call):
        yield from _walk(value.args)


def _peer(addr: dict[str, object]) -> Peer | None:
    family = str(addr.get("sa_family", "")).removeprefix("AF_").lower()
    port = None
    address = ""
    for key in ("sin_port", "sin6_port"):
        call = addr.get(key)
        if isinstance(call, Call) and call.args and str(call.args[0]).isdigit():
            port = int(str(call.args[0]))
    for item in _walk(addr):
        if isinstance(item, Call) and item.name in ("inet_addr", "inet_pton"):
            address = next((_text(a) for a in item.args if isinstance(a, bytes)), "")
    if "sun_path" in addr:
        address = _text(addr["sun_path"])
    if "nl_pid" in addr:
        address = str(addr["nl_pid"])
    return Peer(family, address, port) if family else None


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


@dataclass
class _Collector:
    execs: list[tuple[str, ...]]
    reads: list[str]
    writes: list[str]
    unlinks: list[str]
    renames: list[tuple[str, str]]
    connects: list[Peer]
    dns: list[str]

    def add(self, event: Event) -> None:
        name, args = event.syscall, event.args
        strings = [_text(a) for a in args if isinstance(a, bytes)]
        if name in _EXEC and _ok(event.result):
            argv = next((a for a in args if isinstance(a, list)), [])
            self.execs.append(tuple(_text(a) for a in argv))
        elif name in _OPEN and strings:
            flags = " ".join(str(a) for a in args if isinstance(a, str))
            if name == "creat" or any(f in flags for f in _WRITE_FLAGS):
                self.writes.append(strings[0])
            elif not strings[0].startswith(_QUIET_READ_PREFIXES):
                self.reads.append(strings[0])
        elif name in _UNLINK and strings:
            self.unlinks.append(strings[0])
        elif name in _RENAME and len(strings) >= 2:
            self.renames.append((strings[0], strings[1]))
        elif name in _SEND:
            self._add_send(args)

    def _add_send(self, args: tuple[object, ...]) -> None:
        for item in _walk(args[1:]):
            if isinstance(item, dict) and "sa_family" in item:
                peer = _peer(item)
                if peer is not None and peer not in self.connects:
                    self.connects.append(peer)
            elif isinstance(item, bytes):
                query = decode_dns_query(item)
                if query is not None and query not in self.dns:
                    self.dns.append(query)

    def summary(self) -> TraceSummary:
        return TraceSummary(
            execs=tuple(self.execs),
            reads=tuple(dict.fromkeys(self.reads)),
            writes=tuple(dict.fromkeys(self.writes)),
            unlinks=tuple(self.unlinks),
            renames=tuple(self.renames),
            connects=tuple(self.connects),
            dns_queries=tuple(self.dns),
        )


def _hexed(text: str) -> str:
    """A string as strace -xx prints it."""
    return '"\\x' + text.encode().hex("|").replace("|", "\\x") + '"' if text else '""'


_QUIET_READ_HEX = tuple(_hexed(p)[:-1] for p in _QUIET_READ_PREFIXES)


def _worth_parsing(line: str) -> bool:
    """Cheap pre-filter: most lines are read-only opens of the interpreter's own files."""
    if line.startswith(_OPEN):
        flags = line.rpartition('"')[2]  # the path is the last string; flags follow it
        if line.startswith("creat(") or any(f in flags for f in _WRITE_FLAGS):
            return True
        return not any(quiet in line for quiet in _QUIET_READ_HEX)
    return not line.startswith(("+++", "---"))


def _events(lines: Iterable[str]) -> list[Event]:
    parsed = (parse_line(line) for line in lines if _worth_parsing(line))
    return [e for e in parsed if e is not None]


def _argv(event: Event) -> tuple[str, ...]:
    return tuple(_text(a) for a in next((a for a in event.args if isinstance(a, list)), []))


def _exec_prefix(argv: tuple[str, ...]) -> str:
    """How strace -xx prints the start of a successful execve of `argv`."""

    return f"execve({_hexed(argv[0])}, [{', '.join(map(_hexed, argv))}]"


def summarise(out_prefix: Path, launcher: Iterable[str], command: Iterable[str]) -> TraceSummary:
    """Events of the sandboxed command (from its exec on) and all its descendants.

    The process that executed `launcher` (strace's child) and the one process
    it clones (bubblewrap's namespace init) only set the sandbox up; they are
    recognised before anything is parsed (the launcher's argv, with its random
    run paths, cannot be forged from inside the sandbox).
    """
    command = tuple(command)
    files = {
        int(p.name.rsplit(".", 1)[1]): p.read_text("ascii", errors="replace").splitlines()
        for p in out_prefix.parent.glob(out_prefix.name + ".*")
    }
    marker = _exec_prefix(tuple(launcher))
    for pid, lines in list(files.items()):
        if lines and lines[0].startswith(marker):
            del files[pid]
            forks = _events(line for line in lines if line.startswith(_FORK))
            for fork in forks:
                if fork.result.isdigit():
                    files.pop(int(fork.result), None)
            break
    collector = _Collector([], [], [], [], [], [], [])
    for _, lines in sorted(files.items()):  # pids grow with time (roughly)
        events = _events(lines)
        start = next(
            (n for n, e in enumerate(events) if e.syscall in _EXEC and _argv(e) == command), 0
        )
        for event in events[start:]:
            collector.add(event)
    return collector.summary()
