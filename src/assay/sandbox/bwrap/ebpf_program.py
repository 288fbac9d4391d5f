"""The bpftrace program of the eBPF observer, written for one session of many runs.

Only tracepoints are used (syscalls and sched): they need no kprobe or ftrace access,
which some hosts refuse even to root while BTF and BPF work. Every probe is filtered
in the kernel on the parent cgroup v2 group under which each observed run's group is
made, so nothing of the host is seen, and nothing stops the traced process: the
programs run in its context. Every line carries the run's own cgroup v2 id (the
`cgroup` builtin), by which the session hands each run its own records alone.

Paths are the kernel's own: a dentry walk (`_walk`) prints, leaf first, the names
from a file's dentry up to its filesystem's root, with the filesystem's device
(the observer maps each device back to where the sandbox mounts it). It is made on
the file an open returned (so symlinks, `/proc/self/root` and `..` are followed as
the kernel followed them), on the executed file, and, for a call that named a
relative path, on the directory it was relative to: the working directory the
kernel holds for the process (`chdir` needs no tracking) or the handle's file.

User strings are read at the syscall's exit, once the kernel has copied them in
(at entry their page may not be resident yet). Every line starts with a per-session
nonce: a printed string holding a newline cannot forge a record.

A marker line (`m`) is printed when the validator itself calls getpriority() with the
session's secret `which`: called once on every CPU after a run has ended, it tells the
session that every CPU's buffer has been read past the run's last event.
"""

from __future__ import annotations

from dataclasses import dataclass

WALK_DEPTH = 24  # directory levels printed, at most (deeper paths are marked cut)
CHUNK = 200  # bytes a printed buffer holds (bpftrace's string limit)
ARGV_CHUNKS = 20  # an argv is printed up to this many chunks
SEND_CHUNKS = 3  # a send's data, up to this many (a DNS query is < 512 bytes)
AT_FDCWD = -100
_SLASH = ord("/")
_NAMED = "str(args->filename)"
_SOCKET_MODE = 0xC000  # S_IFSOCK
_DNS_PORT_BE = 0x3500  # htons(53) as the kernel stores it, read little-endian


@dataclass(frozen=True)
class FileCall:
    """A traced file syscall: its paths (argument, and its directory handle's argument
    or None for the working directory), its flags argument, and what it is."""

    name: str
    kind: str  # open, unlink, rename, link, symlink
    paths: tuple[tuple[str, str | None], ...]
    flags: str | None = None


# open flags of creat(): O_CREAT | O_WRONLY | O_TRUNC
_CREAT_FLAGS = 0o1101

FILE_CALLS = (
    FileCall("open", "open", (("filename", None),), "flags"),
    FileCall("openat", "open", (("filename", "dfd"),), "flags"),
    FileCall("openat2", "open", (("filename", "dfd"),), "how"),
    FileCall("creat", "open", (("pathname", None),), str(_CREAT_FLAGS)),
    FileCall("unlink", "unlink", (("pathname", None),)),
    FileCall("unlinkat", "unlink", (("pathname", "dfd"),)),
    FileCall("rmdir", "unlink", (("pathname", None),)),
    FileCall("rename", "rename", (("oldname", None), ("newname", None))),
    FileCall("renameat", "rename", (("oldname", "olddfd"), ("newname", "newdfd"))),
    FileCall("renameat2", "rename", (("oldname", "olddfd"), ("newname", "newdfd"))),
    FileCall("link", "link", (("oldname", None), ("newname", None))),
    FileCall("linkat", "link", (("oldname", "olddfd"), ("newname", "newdfd"))),
    FileCall("symlink", "symlink", (("oldname", None), ("newname", None))),
    FileCall("symlinkat", "symlink", (("oldname", None), ("newname", "newdfd"))),
)


@dataclass(frozen=True)
class SessionSpec:
    """What a session's program is written for: its nonce, the parent group its runs'
    groups are made under (its cgroup v2 id, and the name of kernfs_node's parent field
    on this kernel), and the `which` its markers are called with."""

    nonce: str
    parent_id: int
    parent_field: str
    marker_which: int


class _Writer:
    def __init__(self, session: SessionSpec) -> None:
        self.nonce = session.nonce
        self.group = f"curtask->cgroups->dfl_cgrp->kn->{session.parent_field}->id"
        self.filter = f"/{self.group} == {session.parent_id}/"
        self.parts: list[str] = []

    def line(self, fmt: str, *args: str) -> str:
        """A line of the run's: the nonce, the run's cgroup id, then `fmt`."""
        joined = "".join(f", {a}" for a in ("cgroup", *args))
        return f'printf("{self.nonce} %llu {fmt}\\n"{joined});'

    def head(self, kind: str, fmt: str = "", *args: str) -> str:
        """A record's first line: when, which process and thread, what."""
        return self.line(f"h %llu %d %d {kind} {fmt}".rstrip(), "nsecs", "pid", "tid", *args)

    def walk(self, dentry: str, tag: str) -> str:
        component = self.line("c %d %s", "tid", "str($d->d_name.name)")
        end = self.line(
            f"w %d {tag} %u %x %d", "tid", "$d->d_sb->s_dev", "$d->d_sb->s_magic", "$cut"
        )
        return (
            f"$d = (struct dentry *)({dentry});"
            f"unroll({WALK_DEPTH}) {{ if ($d != $d->d_parent) {{ {component} "
            "$d = $d->d_parent; } }"
            "$cut = $d != $d->d_parent;"
            f"{end}"
        )

    def fd_file(self, fd: str) -> str:
        """Sets $f to the file of descriptor `fd` of the current process (0 if none)."""
        return (
            "$f = (struct file *)0;"
            f"if ({fd} >= 0 && {fd} < curtask->files->fdt->max_fds) "
            f"{{ $f = *(curtask->files->fdt->fd + {fd}); }}"
        )

    def chunks(self, tag: str, start: str, length: str, count: int) -> str:
        """A user buffer printed in CHUNK-byte pieces (%r: unprintable bytes as \\xNN)."""
        piece = self.line(f"{tag} %d %r", "tid", f"buf(uptr($a), $n > {CHUNK} ? {CHUNK} : $n)")
        return (
            f"$a = (uint64)({start}); $n = (int64)({length});"
            f"unroll({count}) {{ if ($n > 0) {{ {piece} $a += {CHUNK}; $n -= {CHUNK}; }} }}"
        )

    def within(self, test: str) -> str:
        """A predicate: the runs' parent group, and `test`."""
        return f"{self.filter[:-1]} && {test}/"

    def probe(self, name: str, body: str, predicate: str | None = None) -> None:
        self.parts.append(f"{name} {predicate or self.filter} {{ {body} }}")


def program(session: SessionSpec) -> str:
    """The bpftrace program: process lifetime, execs, file calls, connects and sends."""
    w = _Writer(session)
    w.parts.append(f'BEGIN {{ printf("{session.nonce} ready\\n"); }}')
    w.parts.append(
        "tracepoint:syscalls:sys_enter_getpriority"
        # Never from a run's process (nor would one know the `which`).
        f" /args->which == {session.marker_which} && {w.group} != {session.parent_id}/"
        f' {{ printf("{session.nonce} m %d %d\\n", args->who, cpu); }}'
    )
    w.probe("tracepoint:sched:sched_process_fork", w.head("fork", "%d", "args->child_pid"))
    w.probe("tracepoint:sched:sched_process_exit", w.head("exit"))
    w.probe(
        "tracepoint:sched:sched_process_exec",
        # The file as the caller named it, last on the record's first line.
        w.head("exec", "%d %s", "curtask->mm->arg_end - curtask->mm->arg_start", _NAMED)
        + w.walk("curtask->mm->exe_file->f_path.dentry", "exe")
        + w.chunks(
            "b",
            "curtask->mm->arg_start",
            "curtask->mm->arg_end - curtask->mm->arg_start",
            ARGV_CHUNKS,
        ),
    )
    _file_calls(w)
    _network(w)
    return "\n".join(w.parts) + "\n"


def _file_calls(w: _Writer) -> None:
    """Each call's arguments are saved at its entry; one exit probe prints them all
    (the dentry walks are written once, not once per call: the program's size is what
    bpftrace's start-up costs)."""
    for number, call in enumerate(FILE_CALLS, start=1):
        saved = [f"@k[tid] = {number};"]
        for slot, (path, dfd) in enumerate(call.paths, start=1):
            saved.append(f"@p{slot}[tid] = (uint64)args->{path};")
            saved.append(f"@d{slot}[tid] = {f'args->{dfd}' if dfd else AT_FDCWD};")
        if call.flags == "how":
            saved.append("@fl[tid] = *(uint64 *)uptr(args->how);")
        elif call.flags is not None:
            flags = call.flags if call.flags.isdigit() else f"args->{call.flags}"
            saved.append(f"@fl[tid] = {flags};")
        w.probe(f"tracepoint:syscalls:sys_enter_{call.name}", "".join(saved))
    # Every line printed is an event the kernel hands bpftrace, whose reader wakes for each
    # (what a printed call costs the process): the first path is on the record's own line.
    first = "str(uptr(@p1[tid]))"
    body = ["$r = args->ret;", w.head("file", "%d %d %d %s", "@k[tid]", "$r", "@fl[tid]", first)]
    for slot in (1, 2):
        pointer, dfd = f"@p{slot}[tid]", f"@d{slot}[tid]"
        tag = f"b{slot}"
        # One walk of whichever it was relative to (each walk written is compile time).
        relative_base = (
            f"if ((int32){dfd} == {AT_FDCWD}) {{ $base = (uint64)curtask->fs->pwd.dentry; }} "
            f"else {{ {w.fd_file(dfd)} $base = (uint64)$f->f_path.dentry; }}"
            f"{w.walk('$base', tag)}"
        )
        named = w.line(f"s %d {slot} %s", "tid", f"str(uptr({pointer}))") if slot > 1 else ""
        body.append(
            f"if ({pointer} != 0) {{ {named}"
            f" if (*(uint8 *)uptr({pointer}) != {_SLASH}) {{ {relative_base} }} }}"
        )
    opens = " || ".join(f"@k[tid] == {n}" for n, c in enumerate(FILE_CALLS, 1) if c.kind == "open")
    body.append(
        f"if (($r >= 0) && ({opens})) {{ {w.fd_file('$r')} {w.walk('$f->f_path.dentry', 'to')} }}"
    )
    body += [f"delete(@{m}[tid]);" for m in ("k", "fl", "p1", "d1", "p2", "d2")]
    # Every syscall of the host passes this probe: the parent group is tested first (a
    # few reads), the map only for the runs' own.
    filed = w.within("@k[tid] > 0 && @k[tid] < 100")
    w.probe("tracepoint:raw_syscalls:sys_exit", "".join(body), filed)


def _socket_port(w: _Writer, fd: str) -> str:
    """Sets $port to the peer port (network order) the socket `fd` is connected to."""
    return (
        w.fd_file(fd) + "$port = 0;"
        f"if ($f != 0 && ($f->f_inode->i_mode & 0xf000) == {_SOCKET_MODE}) "
        "{ $port = ((struct socket *)$f->private_data)->sk->__sk_common.skc_dport; }"
    )


def _network(w: _Writer) -> None:
    """connect's address; each send's address and data (sendmsg's first buffer). A
    write is a send when its descriptor is a socket connected to port 53 (a resolver
    writing its query on a connected UDP socket)."""
    w.probe(
        "tracepoint:syscalls:sys_enter_connect",
        "@k[tid] = 100; @sa[tid] = (uint64)args->uservaddr; @sl[tid] = args->addrlen;",
    )
    w.probe(
        "tracepoint:syscalls:sys_exit_connect",
        w.head("connect", "%d", "args->ret")
        + w.chunks("a", "@sa[tid]", "@sl[tid] > 110 ? 110 : @sl[tid]", 1)
        + "delete(@k[tid]); delete(@sa[tid]); delete(@sl[tid]);",
        "/@k[tid] == 100/",
    )
    sends = {
        "sendto": (
            "@sa[tid] = (uint64)args->addr; @sl[tid] = args->addr_len;"
            "@b[tid] = (uint64)args->buff; @bl[tid] = args->len;"
        ),
        "sendmsg": (
            "$m = (struct user_msghdr *)args->msg;"
            "@sa[tid] = (uint64)uptr($m)->msg_name; @sl[tid] = uptr($m)->msg_namelen;"
            "$v = (struct iovec *)uptr($m)->msg_iov;"
            "@b[tid] = (uint64)uptr($v)->iov_base; @bl[tid] = uptr($v)->iov_len;"
        ),
        "sendmmsg": (
            "$m = (struct user_msghdr *)args->mmsg;"
            "@sa[tid] = (uint64)uptr($m)->msg_name; @sl[tid] = uptr($m)->msg_namelen;"
            "$v = (struct iovec *)uptr($m)->msg_iov;"
            "@b[tid] = (uint64)uptr($v)->iov_base; @bl[tid] = uptr($v)->iov_len;"
        ),
        "write": "@b[tid] = (uint64)args->buf; @bl[tid] = args->count;",
        "writev": (
            "$v = (struct iovec *)args->vec;"
            "@b[tid] = (uint64)uptr($v)->iov_base; @bl[tid] = uptr($v)->iov_len;"
        ),
    }
    for number, (name, saving) in enumerate(sends.items(), start=101):
        w.probe(
            f"tracepoint:syscalls:sys_enter_{name}",
            f"@k[tid] = {number}; @fd[tid] = args->fd; {saving}",
        )
    record = (
        w.head("send", "%d %d", "args->ret", "$port")
        + w.chunks("a", "@sa[tid]", "@sa[tid] == 0 ? 0 : (@sl[tid] > 110 ? 110 : @sl[tid])", 1)
        + w.chunks("p", "@b[tid]", "args->ret > 0 ? @bl[tid] : 0", SEND_CHUNKS)
    )
    writes = " || ".join(f"@k[tid] == {n}" for n, name in enumerate(sends, 101) if "write" in name)
    w.probe(
        "tracepoint:raw_syscalls:sys_exit",
        _socket_port(w, "@fd[tid]")
        + f"if ($port == {_DNS_PORT_BE} || !({writes})) {{ {record} }}"
        + "".join(f"delete(@{m}[tid]);" for m in ("k", "fd", "sa", "sl", "b", "bl")),
        w.within("@k[tid] > 100"),
    )
