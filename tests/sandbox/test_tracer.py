"""Parsing strace output: argument grammar, DNS packets, and which processes count."""

from __future__ import annotations

from pathlib import Path

from assay.sandbox.bwrap.tracer import PROFILES, decode_dns_query, parse_line, summarise
from assay.sandbox.interface import Executed, Link, Peer, TraceSet, TraceSummary


def hexs(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return '"' + "".join(f"\\x{b:02x}" for b in data) + '"'


def bare(path: str) -> str:
    """A path as strace -xx prints it beside a descriptor (no quotes)."""
    return hexs(path)[1:-1]


def execve(argv: tuple[str, ...], result: str = "0") -> str:
    return f"execve({hexs(argv[0])}, [{', '.join(hexs(a) for a in argv)}], 0x1) = {result}"


def dns_query(name: str, qtype: int = 1) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split("."))
    return (
        b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
        + labels
        + b"\x00"
        + bytes([0, qtype, 0, 1])
    )


def test_execve_argv_is_decoded() -> None:
    line = (
        f"execve({hexs('/usr/bin/echo')}, [{hexs('echo')}, {hexs('tok')}], 0x55 /* 3 vars */) = 0"
    )
    event = parse_line(line)
    assert event is not None
    assert event.syscall == "execve" and event.result == "0"
    assert event.args[1] == [b"echo", b"tok"]


def test_connect_peer_and_sendmmsg_payload(tmp_path: Path) -> None:
    connect = (
        f"connect(3<UDP:[77]>, {{sa_family=AF_INET, sin_port=htons(53), "
        f"sin_addr=inet_addr({hexs('127.0.0.1')})}}, 16) = 0"
    )
    packet = dns_query("n1.probe.assay.invalid")
    iov = f"msg_iov=[{{iov_base={hexs(packet)}, iov_len={len(packet)}}}]"
    send = (
        f"sendmmsg(3<UDP:[77]>, [{{msg_hdr={{msg_name=NULL, msg_namelen=0, {iov}, msg_iovlen=1, "
        "msg_controllen=0, msg_flags=0}, msg_len=41}], 2, MSG_NOSIGNAL) = 2"
    )
    unix = f"connect(5, {{sa_family=AF_UNIX, sun_path={hexs('/run/x.sock')}}}, 110) = -1 ENOENT"
    files = {7: [f"execve({hexs('/x')}, [{hexs('/x')}], 0x1) = 0", connect, send, unix]}
    summary = summarise(write_trace(tmp_path, files), ("launcher",), ("/x",))
    assert summary.connects == (Peer("inet", "127.0.0.1", 53), Peer("unix", "/run/x.sock"))
    assert summary.dns_queries == ("n1.probe.assay.invalid",)


def test_unparseable_lines_are_skipped() -> None:
    assert parse_line("+++ exited with 0 +++") is None
    assert parse_line('openat(AT_FDCWD, "\\x2f') is None


def test_dns_query_names_decode_from_udp_and_tcp() -> None:
    packet = dns_query("Abc.Probe.assay.invalid", qtype=28)
    assert decode_dns_query(packet) == "Abc.Probe.assay.invalid"
    assert decode_dns_query(len(packet).to_bytes(2, "big") + packet) == "Abc.Probe.assay.invalid"


def test_dns_decoder_refuses_responses_and_garbage() -> None:
    response = bytearray(dns_query("a.b"))
    response[2] |= 0x80
    assert decode_dns_query(bytes(response)) is None
    assert decode_dns_query(b"\x00" * 40) is None
    assert decode_dns_query(b"hello") is None


def write_trace(tmp_path: Path, files: dict[int, list[str]]) -> Path:
    prefix = tmp_path / "t"
    for pid, lines in files.items():
        (tmp_path / f"t.{pid}").write_text("\n".join(lines) + "\n")
    return prefix


def test_summary_keeps_only_the_command_and_its_descendants(tmp_path: Path) -> None:
    launcher = ("/bin/sh", "-c", "x")
    command = ("/usr/bin/python3", "/task/input/shim.py")
    packet = dns_query("n1.probe.assay.invalid")
    files = {
        100: [  # launcher: sh, then bwrap; clones the namespace init 101
            f"execve({hexs('/bin/sh')}, [{', '.join(hexs(a) for a in launcher)}], 0x1) = 0",
            f"openat(AT_FDCWD, {hexs('/sys/fs/cgroup/x')}, O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3",
            "clone(child_stack=NULL, flags=CLONE_NEWPID|SIGCHLD) = 101",
        ],
        101: [f"openat(7, {hexs('uid_map')}, O_RDWR|O_CLOEXEC) = 8"],  # bubblewrap setup
        102: [  # the command: setup before its exec is not counted
            f"openat(AT_FDCWD, {hexs('/setup')}, O_WRONLY) = 3",
            execve(command),
            f"openat(AT_FDCWD, {hexs('/task/workspace/p')}, O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3",
            f"openat(AT_FDCWD, {hexs('/usr/lib/x.py')}, O_RDONLY|O_CLOEXEC) = 3",
            f"openat(AT_FDCWD, {hexs('/root/.ssh/id_rsa')}, O_RDONLY) = -1 ENOENT (No such file)",
            f"unlinkat(AT_FDCWD, {hexs('/tmp/gone')}, 0) = 0",
            f"renameat2(AT_FDCWD, {hexs('/tmp/a')}, AT_FDCWD, {hexs('/tmp/b')}, 0) = 0",
            f"sendto(3<UDP:[9]>, {hexs(packet)}, {len(packet)}, MSG_NOSIGNAL, "
            f"{{sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr({hexs('127.0.0.1')})}}"
            f", 16) = {len(packet)}",
            "vfork() = 3",
        ],
        103: [  # a child of the command
            f"execve({hexs('/usr/local/bin/echo')}, [{hexs('echo')}, {hexs('tok')}], 0x1) = -1 "
            "ENOENT (No such file or directory)",
            f"execve({hexs('/usr/bin/echo')}, [{hexs('echo')}, {hexs('tok')}], 0x1) = 0",
            f"connect(4, {{sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), "
            f"inet_pton(AF_INET6, {hexs('::1')}, &sin6_addr), sin6_scope_id=0}}, 28) = -1 "
            "ECONNREFUSED (Connection refused)",
        ],
    }
    summary = summarise(write_trace(tmp_path, files), launcher, command)
    assert summary.execs == (command, ("echo", "tok"))
    assert summary.writes == ("/task/workspace/p",)
    assert summary.reads == ("/root/.ssh/id_rsa",)
    assert summary.unlinks == ("/tmp/gone",)
    assert summary.renames == (("/tmp/a", "/tmp/b"),)
    assert summary.dns_queries == ("n1.probe.assay.invalid",)
    assert summary.connects == (Peer("inet", "127.0.0.1", 53), Peer("inet6", "::1", 443))
    assert summary.saw_dns("N1.probe.assay.invalid.")
    assert summary.saw_exec_with("tok") and not summary.saw_exec_with("other")


INET53 = f"{{sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr({hexs('127.0.0.1')})}}"
EXEC = f"execve({hexs('/x')}, [{hexs('/x')}], 0x1) = 0"


def summary_of(
    tmp_path: Path, lines: list[str], trace_set: TraceSet = TraceSet.FULL
) -> TraceSummary:
    return summarise(write_trace(tmp_path, {7: [EXEC, *lines]}), ("launcher",), ("/x",), trace_set)


def test_only_sends_that_reached_a_socket_are_dns_lookups(tmp_path: Path) -> None:
    packet = hexs(dns_query("n1.probe.assay.invalid"))
    forged = [
        f"sendto(-1, {packet}, 40, 0, {INET53}, 16) = -1 EBADF (Bad file descriptor)",
        f"sendto(4<UDP:[5]>, {packet}, 40, 0, {INET53}, 16) = -1 EPERM (Operation not permitted)",
        f"sendmmsg(4<UDP:[5]>, [{{msg_hdr={{msg_name={INET53}, msg_iov=[{{iov_base={packet}}}]}}}}]"
        ", 1, 0) = 0",
        f"sendto(4<UDP:[5]>, {packet}, 40, 0, "
        f"{{sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr({hexs('1.2.3.4')})}}"
        ", 16) = 40",  # a real send, but not to a DNS server
        f"sendto(5<UNIX:[6]>, {hexs('x')}, 1, 0, {{sa_family=AF_UNIX, sun_path={packet}}}"
        ", 110) = 1",  # the query's bytes are the address, not the data
    ]
    summary = summary_of(tmp_path, forged)
    assert summary.dns_queries == ()
    real = f"sendto(4<UDP:[5]>, {packet}, 40, 0, {INET53}, 16) = 40"
    assert summary_of(tmp_path, [real]).dns_queries == ("n1.probe.assay.invalid",)


def test_write_on_a_udp_socket_connected_to_port_53_is_a_lookup(tmp_path: Path) -> None:
    packet = hexs(dns_query("go.probe.assay.invalid"))
    other = hexs(dns_query("file.probe.assay.invalid"))
    lines = [
        f"connect(3<UDP:[41]>, {INET53}, 16) = 0",
        f"write(3<UDP:[41]>, {packet}, 40) = 40",
        f"connect(5<UDP:[42]>, {INET53.replace('htons(53)', 'htons(5353)')}, 16) = 0",
        f"write(5<UDP:[42]>, {other}, 40) = 40",  # not port 53
        f"write(6, {other}, 40) = 40",  # a file
        f"writev(3<UDP:[41]>, [{{iov_base={other}, iov_len=40}}], 1) = -1 ECONNREFUSED",
    ]
    summary = summary_of(tmp_path, lines, TraceSet.LIVENESS)
    assert summary.dns_queries == ("go.probe.assay.invalid",)
    lines[-1] = f"writev(3<UDP:[41]>, [{{iov_base={other}, iov_len=40}}], 1) = 40"
    summary = summary_of(tmp_path, lines, TraceSet.LIVENESS)
    assert summary.dns_queries == ("go.probe.assay.invalid", "file.probe.assay.invalid")


def test_a_send_on_a_socket_strace_names_by_its_addresses_is_a_lookup_to_53(
    tmp_path: Path,
) -> None:
    """glibc's resolver connects its UDP socket and sends without an address; strace names
    the connected socket by its two addresses, not its inode."""
    packet = hexs(dns_query("libc.probe.assay.invalid"))
    other = hexs(dns_query("ntp.probe.assay.invalid"))
    lines = [
        f"connect(3<UDP:[41]>, {INET53}, 16) = 0",
        f"sendto(3<UDP:[10.0.0.2:40648->10.0.0.1:53]>, {packet}, 40, MSG_NOSIGNAL, NULL, 0) = 40",
        f"sendto(4<UDP:[10.0.0.2:40649->10.0.0.1:123]>, {other}, 40, 0, NULL, 0) = 40",
        f"sendto(5<UDPv6:[[fd00::2]:40650->[fd00::1]:5353]>, {other}, 40, 0, NULL, 0) = 40",
    ]
    summary = summary_of(tmp_path, lines, TraceSet.LIVENESS)
    assert summary.dns_queries == ("libc.probe.assay.invalid",)
    lines.append(
        f"sendto(6<UDPv6:[[fd00:0:0:0:0:0:0:2]:40651->[fd00:0:0:0:0:0:0:1]:53]>, {other}, 40, 0,"
        " NULL, 0) = 40"
    )
    summary = summary_of(tmp_path, lines, TraceSet.LIVENESS)
    assert summary.dns_queries == ("libc.probe.assay.invalid", "ntp.probe.assay.invalid")


def test_an_exec_that_did_not_return_0_is_no_exec(tmp_path: Path) -> None:
    lines = [
        f"execve({hexs('/bin/echo')}, [{hexs('echo')}, {hexs('tok')}], 0x1) = ?",
        f"execve({hexs('/bin/echo')}, [{hexs('echo')}, {hexs('tok2')}], 0x1) = -1 ENOENT",
        f"execve({hexs('/bin/echo')}, [{hexs('echo')}, {hexs('tok3')}], 0x1) = 11",
    ]
    summary = summary_of(tmp_path, lines)
    assert not any(summary.saw_exec_with(t) for t in ("tok", "tok2", "tok3"))


def test_summary_lists_are_capped_and_marked_truncated(tmp_path: Path) -> None:
    cap = PROFILES[TraceSet.FULL].summary_items
    lines = [
        f"sendto(4<UDP:[5]>, {hexs('x')}, 1, 0, {{sa_family=AF_INET, sin_port=htons({n % 60000}),"
        f" sin_addr=inet_addr({hexs(f'10.0.{n // 250 % 250}.{n % 250}')})}}, 16) = 1"
        for n in range(3 * cap)
    ]
    lines += [f"openat(AT_FDCWD, {hexs(f'/w/{n}')}, O_WRONLY|O_CREAT, 0666) = 3" for n in range(5)]
    summary = summary_of(tmp_path, lines)
    assert len(summary.connects) == cap and summary.truncated
    assert summary.writes == tuple(f"/w/{n}" for n in range(5))
    assert not summary_of(tmp_path, lines[:10]).truncated


def test_the_launcher_is_recognised_when_strace_cuts_its_script(tmp_path: Path) -> None:
    limit = PROFILES[TraceSet.LIVENESS].string_bytes
    script = "echo 0 > /sys/fs/cgroup/run-1234/tasks; " * 20 + 'exec "$@"'
    launcher = ("/bin/sh", "-c", script, "sh", "bwrap")
    shown = hexs(script.encode()[:limit])[:-1] + '"...'
    files = {
        100: [
            f"execve({hexs('/bin/sh')}, [{hexs('/bin/sh')}, {hexs('-c')}, {shown}, "
            f"{hexs('sh')}, {hexs('bwrap')}], 0x1) = 0",
            f"execve({hexs('/usr/bin/x')}, [{hexs('/usr/bin/x')}], 0x1) = 0",
            "clone(child_stack=NULL, flags=CLONE_NEWPID|SIGCHLD) = 101",
        ],
        101: [f"execve({hexs('/usr/bin/y')}, [{hexs('/usr/bin/y')}], 0x1) = 0"],
        102: [EXEC],
    }
    summary = summarise(write_trace(tmp_path, files), launcher, ("/x",), TraceSet.LIVENESS)
    assert summary.execs == (("/x",),)


def test_lookups_after_a_send_flood_past_the_peer_cap_are_still_seen(tmp_path: Path) -> None:
    cap = PROFILES[TraceSet.LIVENESS].summary_items
    flood = [
        f"sendto(4<UDP:[5]>, {hexs('x')}, 1, 0, {{sa_family=AF_INET, sin_port=htons({1024 + n}),"
        f" sin_addr=inet_addr({hexs(f'10.0.{n // 250 % 250}.{n % 250}')})}}, 16) = 1"
        for n in range(4000)  # more than one batch of lines, and past every cap
    ]
    addressed = hexs(dns_query("sent.probe.assay.invalid"))
    connected = hexs(dns_query("written.probe.assay.invalid"))
    lines = [
        *flood,
        f"write(6, {connected}, 40) = 40",  # a file
        f"sendto(4<UDP:[5]>, {addressed}, 40, 0, {INET53}, 16) = 40",
        *flood,
        f"connect(3<UDP:[41]>, {INET53}, 16) = 0",
        *flood,
        f"writev(3<UDP:[41]>, [{{iov_base={connected}, iov_len=40}}], 1) = 40",
    ]
    summary = summary_of(tmp_path, lines, TraceSet.LIVENESS)
    assert summary.dns_queries == ("sent.probe.assay.invalid", "written.probe.assay.invalid")
    assert len(summary.connects) == cap and summary.truncated
    assert Peer("inet", "127.0.0.1", 53) not in summary.connects  # the list was full by then


def test_calls_traced_only_to_end_stepping_are_no_evidence(tmp_path: Path) -> None:
    command = ("/usr/bin/python3", "/task/input/shim.py")
    exec_command = execve(command)
    opened = f"openat(AT_FDCWD, {hexs('/task/workspace/early')}, O_WRONLY|O_CREAT, 0666) = 3"
    files = {
        # bubblewrap's fork of the command: its first traced call precedes the exec
        102: ["set_robust_list(0x7f1933ea04a0, 24) = 0", exec_command],
        # a subprocess child: redirects its output, then execs
        103: ["dup2(4, 1) = 1", "dup2(6, 2) = 2", f"execve({hexs('/e')}, [{hexs('echo')}], 0) = 0"],
        # a descendant that did more than bubblewrap ever does before an exec
        # looking like the command's is counted whole
        104: ["set_robust_list(0x7f, 24) = 0"] * 300 + [opened, exec_command],
    }
    summary = summarise(write_trace(tmp_path, files), ("launcher",), command)
    assert summary.execs == (command, ("echo",))
    assert summary.writes == ("/task/workspace/early",)
    assert summary.connects == () and not summary.truncated


def test_paths_are_the_ones_the_kernel_resolved(tmp_path: Path) -> None:
    key = "/home/dev/.ssh/id_rsa"
    lines = [
        # relative to a handle on / (failed, so only the handle's path tells)
        f"openat(3<{bare('/')}>, {hexs('home/dev/.aws/credentials')}, O_RDONLY) = -1 ENOENT",
        # through /proc/self/root, with a leading //, and through a symlink: what was opened
        f"openat(AT_FDCWD<{bare('/tmp')}>, {hexs('/proc/self/root/home/dev/.env')}, "
        "O_RDONLY) = -1 ENOENT",
        f"openat(AT_FDCWD<{bare('/tmp')}>, {hexs('//home/dev/.netrc')}, O_RDONLY) = -1 EACCES",
        f"openat(AT_FDCWD<{bare('/tmp')}>, {hexs('/tmp/h/.ssh/id_rsa')}, O_RDONLY) = "
        f"4<{bare(key)}>",
        f"openat(AT_FDCWD<{bare('/tmp')}>, {hexs('x/../../home/dev/.bashrc')}, "
        "O_WRONLY|O_APPEND) = -1 ENOENT",
        # unlink() prints no directory: the working directory last printed stands for it
        f"unlink({hexs('gone')}) = 0",
    ]
    summary = summary_of(tmp_path, lines)
    assert summary.reads == (
        "/home/dev/.aws/credentials",
        "/home/dev/.env",
        "/home/dev/.netrc",
        key,
    )
    assert summary.writes == ("/home/dev/.bashrc",)
    assert summary.unlinks == ("/tmp/gone",)


def test_a_long_path_is_kept_cut_and_a_handle_that_is_no_path_is_not_its_directory(
    tmp_path: Path,
) -> None:
    deep = "/".join(["d" * 250] * 16)  # 4 KiB: printed whole by strace, 16 KiB as hex
    lines = [
        f"openat(AT_FDCWD<{bare('/tmp')}>, {hexs(deep)}, O_RDONLY) = -1 ENAMETOOLONG",
        # a socket's descriptor before a string: not a directory, so the working one counts
        f"openat(5<UDP:[4711]>, {hexs('.netrc')}, O_RDONLY) = -1 ENOTDIR",
    ]
    summary = summary_of(tmp_path, lines)
    assert summary.reads == ("/tmp/" + deep[:512], "/tmp/.netrc")


def test_links_and_the_file_an_exec_ran_are_recorded(tmp_path: Path) -> None:
    cwd = bare("/task/workspace")
    lines = [
        f"symlink({hexs('/home/dev')}, {hexs('/tmp/h')}) = 0",
        f"symlinkat({hexs('../home/dev/.ssh')}, AT_FDCWD<{cwd}>, {hexs('/tmp/k')}) = 0",
        f"linkat(AT_FDCWD<{cwd}>, {hexs('/home/dev/.bashrc')}, AT_FDCWD<{cwd}>, {hexs('rc')}"
        ", 0) = 0",
        f"link({hexs('/home/dev/.env')}, {hexs('/tmp/e')}) = -1 EXDEV",  # no link made
        f"execve({hexs('/usr/bin/curl')}, [{hexs('python3')}, {hexs('-V')}], 0x1) = 0",
    ]
    summary = summary_of(tmp_path, lines)
    assert summary.links == (
        Link("/tmp/h", "/home/dev", hard=False),
        Link("/tmp/k", "/home/dev/.ssh", hard=False),
        Link("/task/workspace/rc", "/home/dev/.bashrc", hard=True),
    )
    assert Executed("/usr/bin/curl", ("python3", "-V")) in summary.executed


def test_fingerprint_reads_and_timing_loops_are_probes(tmp_path: Path) -> None:
    lines = [
        f"openat(AT_FDCWD, {hexs('/proc/self/status')}, O_RDONLY) = 3<{bare('/proc/7/status')}>",
        f"openat(AT_FDCWD, {hexs('/proc/uptime')}, O_RDONLY) = 3<{bare('/proc/uptime')}>",
        f"openat(AT_FDCWD, {hexs('/proc/self/maps')}, O_RDONLY) = 3<{bare('/proc/7/maps')}>",
        *[f"openat(AT_FDCWD, {hexs('/nope')}, O_RDONLY) = -1 ENOENT"] * 50,
        *[f"openat(AT_FDCWD, {hexs(f'/tmp/p/{n}')}, O_RDONLY) = -1 ENOENT" for n in range(50)],
    ]
    summary = summary_of(tmp_path, lines)
    assert summary.probes == (
        "read /proc/<pid>/status",
        "48+ failed open() calls on /nope in one process",
        "failed open() calls on 48+ names in /tmp/p/ in one process",
    )
    assert "/proc/7/maps" not in summary.reads


def test_what_runtimes_fail_to_find_is_no_timing_probe(tmp_path: Path) -> None:
    # A few dozen retries of one path, names looked up in many directories, files that
    # are no directories, and the loader's search of its own directories are how
    # programs look for files.
    lines = [
        *[f"openat(AT_FDCWD, {hexs('/etc/localtime')}, O_RDONLY) = -1 ENOENT"] * 47,
        # a build opening each file of a tree as a directory
        *[
            f"openat(AT_FDCWD, {hexs(f'/tmp/s/{n}.py')}, O_DIRECTORY) = -1 ENOTDIR"
            for n in range(99)
        ],
        *[
            f"openat(AT_FDCWD, {hexs(f'/tmp/d{n}/x.json')}, O_RDONLY) = -1 ENOENT"
            for n in range(99)
        ],
        *[f"openat(AT_FDCWD, {hexs(f'/tmp/e/{n}')}, O_RDONLY) = -1 ENOENT" for n in range(47)],
        *[
            f"openat(AT_FDCWD, {hexs(f'/usr/lib/l{n}.so')}, O_RDONLY) = -1 ENOENT"
            for n in range(99)
        ],
    ]
    assert summary_of(tmp_path, lines).probes == ()


HARNESS = ("/usr/bin/python3", "-I", "/task/input/harness.py")
LAUNCHER = ("/bin/sh", "-c", "x")


def harness_trace(tmp_path: Path, descendant: list[str]) -> Path:
    """A run near the top of the pid range: the harness forked a child after the kernel
    wrapped its pids, so the child's pid is lower than the harness's and its launcher's."""
    return write_trace(
        tmp_path,
        {
            32700: [execve(LAUNCHER), "clone(child_stack=NULL, flags=CLONE_NEWPID) = 32701"],
            32701: [f"openat(7, {hexs('uid_map')}, O_RDWR|O_CLOEXEC) = 8"],
            32766: [
                "set_robust_list(0x7f, 24) = 0",
                execve(HARNESS),
                f"openat(AT_FDCWD, {hexs('/home/dev/.env')}, O_RDONLY) = -1 ENOENT",
                "clone(child_stack=NULL, flags=SIGCHLD) = 3",
            ],
            301: descendant,
        },
    )


def test_a_harness_commands_own_file_calls_are_left_out(tmp_path: Path) -> None:
    step = ("/usr/bin/python3", "/task/artifact/run.py")
    netrc = f"openat(AT_FDCWD, {hexs('/home/dev/.netrc')}, O_RDONLY) = 3"
    trace = harness_trace(tmp_path, ["set_robust_list(0x7f, 24) = 0", execve(step), netrc])
    summary = summarise(trace, LAUNCHER, HARNESS, harness_command=True)
    # the harness's exec comes first whatever the pids (the detonation leaves it out as such)
    assert summary.execs == (HARNESS, step)
    assert summary.reads == ("/home/dev/.netrc",)
    assert summarise(trace, LAUNCHER, HARNESS).reads == ("/home/dev/.env", "/home/dev/.netrc")


def test_a_descendant_that_execs_the_harness_argv_hides_nothing(tmp_path: Path) -> None:
    tmp = f"openat(AT_FDCWD, {hexs('/tmp/before')}, O_RDONLY) = 3"
    netrc = f"openat(AT_FDCWD, {hexs('/home/dev/.netrc')}, O_RDONLY) = 3"
    # whichever of the two is the harness, neither's file calls are left out
    trace = harness_trace(tmp_path, [tmp, execve(HARNESS), netrc])
    summary = summarise(trace, LAUNCHER, HARNESS, harness_command=True)
    assert summary.execs == (HARNESS,)
    assert summary.reads == ("/tmp/before", "/home/dev/.netrc", "/home/dev/.env")


def test_an_exec_of_the_harness_argv_that_failed_makes_no_harness(tmp_path: Path) -> None:
    tool = ("/usr/bin/curl", "x")
    netrc = f"openat(AT_FDCWD, {hexs('/home/dev/.netrc')}, O_RDONLY) = 3"
    descendant = [execve(HARNESS, "-1 EFAULT (Bad address)"), execve(tool), netrc]
    trace = harness_trace(tmp_path, descendant)
    summary = summarise(trace, LAUNCHER, HARNESS, harness_command=True)
    assert summary.execs == (HARNESS, tool)  # the harness's exec is first, and only it
    assert summary.reads == ("/home/dev/.netrc",)


def opened(path: str) -> str:
    return f"openat(AT_FDCWD<{bare('/tmp')}>, {hexs(path)}, O_RDONLY) = -1 ENOENT"


def test_a_trace_past_its_cap_is_read_up_to_it_cutting_the_longest_process(
    tmp_path: Path,
) -> None:
    """The tracer writes past the cap until the run is ended; the validator reads no more
    than the cap, and a flood in one process cuts that process's trace alone."""
    flood = f"writev(3<{bare('/dev/null')}>, [{{iov_base={hexs('A' * 512)}..., iov_len=4096}}], 1)"
    cut_peer = f"connect(5<TCP:[9]>, {INET53.replace('53', '4444')}, 16"  # the cap cuts it here
    files = {
        7: [EXEC, opened("/home/dev/.early"), *[f"{flood} = 4096"] * 40, opened("/home/dev/.late")],
        8: [opened("/home/dev/.env")],  # a child, whole
    }
    prefix = write_trace(tmp_path, files)
    whole = summarise(prefix, ("launcher",), ("/x",))
    assert whole.reads == ("/home/dev/.early", "/home/dev/.late", "/home/dev/.env")
    summary = summarise(prefix, ("launcher",), ("/x",), read_bytes=64 * 1024)
    assert summary.reads == ("/home/dev/.early", "/home/dev/.env")
    # A line the cap cuts is left out, while one strace never finished (the run was
    # killed while it wrote) is what it wrote.
    (tmp_path / "t.7").write_text(f"{EXEC}\n{cut_peer}) = 0\n")
    read_bytes = (tmp_path / "t.8").stat().st_size + len(f"{EXEC}\n{cut_peer}) ")
    assert summarise(prefix, ("launcher",), ("/x",), read_bytes=read_bytes).connects == ()
    (tmp_path / "t.7").write_text(f"{EXEC}\n{cut_peer}")
    assert summarise(prefix, ("launcher",), ("/x",)).connects == (Peer("inet", "127.0.0.1", 4444),)


def test_a_long_send_is_read_at_its_head_and_end_and_a_long_exec_whole(tmp_path: Path) -> None:
    """A flood's line (an iovec array: a MiB printed) is read at its head, with the call,
    the address and the first buffers, and at its end, with the result; its middle, more
    buffers, is not read (that bounds what a flood costs). An exec is read whole."""
    padding = ", ".join([f"{{iov_base={hexs('B' * 512)}..., iov_len=4096}}"] * 200)
    first = hexs(dns_query("first.probe.assay.invalid"))
    middle = hexs(dns_query("middle.probe.assay.invalid"))

    def sendmsg(peer: str, buffers: str, result: str) -> str:
        return (
            f"sendmsg(4<UDP:[5]>, {{msg_name={peer}, msg_namelen=16, msg_iov=[{buffers}], "
            f"msg_iovlen=402, msg_controllen=0, msg_flags=0}}, 0) = {result}"
        )

    query = f"{{iov_base={first}, iov_len=40}}, {padding}, {{iov_base={middle}, iov_len=40}}"
    unsent = INET53.replace("53", "5353")  # no socket: its result, at the end, says so
    argv = [f"a{n}" * 200 for n in range(200)]
    exec_line = f"execve({hexs('/bin/x')}, [{', '.join(hexs(a) for a in argv)}], 0x1) = 0"
    lines = [
        sendmsg(INET53, f"{query}, {padding}", "40"),
        sendmsg(unsent, padding, "-1 EBADF (Bad file descriptor)"),
        exec_line,
        opened("/home/dev/.after"),
    ]
    assert min(len(line) for line in lines[:3]) > 400 * 1024
    summary = summary_of(tmp_path, lines)
    assert summary.dns_queries == ("first.probe.assay.invalid",)
    assert summary.connects == (Peer("inet", "127.0.0.1", 53),)
    assert summary.execs[-1] == tuple(argv)
    assert summary.reads == ("/home/dev/.after",)


def test_a_relative_path_after_chdir_or_fchdir_is_resolved_against_the_new_directory(
    tmp_path: Path,
) -> None:
    autostart = "/home/dev/.config/autostart"
    lines = [
        f"openat(AT_FDCWD<{bare('/task/workspace/project')}>, {hexs('/tmp/u')}, "
        "O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3",
        # rename() prints no directory: the last printed one is stale after a chdir
        f"chdir({hexs(autostart)})                     = 0",
        f"rename({hexs('/home/dev/.cache/u')}, {hexs('updater.desktop')}) = 0",
        f"chdir({hexs('..')}) = 0",
        f"unlink({hexs('autostart/old.desktop')}) = 0",
        f"chdir({hexs('/nonexistent')}) = -1 ENOENT (No such file or directory)",
        f"fchdir(4<{bare('/home/dev')}>) = 0",
        f"rename({hexs('a')}, {hexs('.bashrc')}) = 0",
    ]
    summary = summary_of(tmp_path, lines)
    assert summary.renames == (
        ("/home/dev/.cache/u", f"{autostart}/updater.desktop"),
        ("/home/dev/a", "/home/dev/.bashrc"),
    )
    assert summary.unlinks == (f"{autostart}/old.desktop",)


def test_each_write_names_the_program_its_process_last_ran(tmp_path: Path) -> None:
    npm = ("node", "/usr/share/nodejs/npm/bin/npm-cli.js", "rebuild")
    hook = ("sh", "-c", "echo x > .github/workflows/x.yml")
    written = f"openat(AT_FDCWD<{bare('/p')}>, {hexs('/p/f')}, O_WRONLY|O_CREAT, 0666) = 3"
    trace = write_trace(
        tmp_path, {7: [EXEC, written, execve(npm), written], 8: [written, execve(hook), written]}
    )
    summary = summarise(trace, ("launcher",), ("/x",))
    assert summary.written_by == (("/p/f", ("/x",)), ("/p/f", npm), ("/p/f", ()), ("/p/f", hook))
