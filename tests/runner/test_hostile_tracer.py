"""Hostile agents against the tracer: forged liveness, and syscall floods that must
cost the agent (its CPU, its rep), never the validator."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from assay.records.outcome import FailureReason, RunOutcome, RunStatus
from assay.sandbox.bwrap.tracer import PROFILES
from assay.sandbox.interface import TraceSet

pytestmark = pytest.mark.sandbox
Run = Callable[..., RunOutcome]

# Helpers the hostile agents share: a DNS query packet, a sockaddr for the
# sandbox's resolver, and libc.
TOOLS = """
import ctypes, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)

def dns_packet(host):
    labels = b"".join(bytes([len(p)]) + p.encode() for p in host.split("."))
    header = struct.pack(">6H", 0x1234, 0x0100, 1, 0, 0, 0)  # a query with one question
    return header + labels + b"\\x00" + struct.pack(">2H", 1, 1)

RESOLVER = struct.pack("<HH4s8x", socket.AF_INET, socket.htons(53), socket.inet_aton("127.0.0.1"))
"""


def expect(outcome: RunOutcome, reason: FailureReason | None) -> None:
    assert outcome.reason == reason, (outcome.detail, outcome.stderr_tail)
    assert outcome.status == (RunStatus.COMPLETED if reason is None else RunStatus.FAILED)


def hostile(*parts: str) -> str:
    return "\n".join(textwrap.dedent(part) for part in (TOOLS, *parts))


def test_a_send_on_no_socket_is_no_lookup(run_agent: Run) -> None:
    outcome = run_agent(
        hostile(
            """
            def agent_main(context):
                thread_probe(context, dns=False)
                q = dns_packet(context["probe"]["dns_host"])
                for fd in (-1, 1000):
                    libc.sendto(fd, q, len(q), 0, RESOLVER, len(RESOLVER))
                return report()
            """
        )
    )
    expect(outcome, FailureReason.PROBE_MISSING)
    assert outcome.detail.startswith("no DNS query for the probe host;")


# i386 execve(path, argv, NULL) through `int 0x80`, from memory below 4 GiB (the
# 32-bit ABI takes 32-bit pointers). seccomp's architecture check kills it.
INT80_EXEC = """
def int80_execve(path, args):
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    base = libc.mmap(None, 4096, 7, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40, -1, 0)
    strings, pointers = base + 64, []
    for s in (path, *args):
        ctypes.memmove(strings, s + b"\\0", len(s) + 1)
        pointers.append(strings)
        strings += len(s) + 1
    argv = (strings + 7) & ~7
    ctypes.memmove(argv, struct.pack(f"<{len(pointers)}I", *pointers[1:], 0), 4 * len(pointers))
    code = (b"\\x53\\xb8" + struct.pack("<I", 11) + b"\\xbb" + struct.pack("<I", pointers[0])
            + b"\\xb9" + struct.pack("<I", argv) + b"\\x31\\xd2\\xcd\\x80\\x5b\\xc3")
    ctypes.memmove(base, code, len(code))
    return ctypes.CFUNCTYPE(ctypes.c_long)(base)()
"""


def test_a_32_bit_execve_killed_by_seccomp_is_no_exec(run_agent: Run) -> None:
    outcome = run_agent(
        hostile(
            INT80_EXEC,
            """
            def agent_main(context):
                thread_probe(context, echo=False)
                token = context["probe"]["process_echo"].encode()
                pid = os.fork()
                if pid == 0:
                    int80_execve(b"/usr/bin/echo", [b"echo", token])
                    os._exit(0)
                _, status = os.waitpid(pid, 0)
                assert os.WIFSIGNALED(status), status  # SIGSYS, not an exec
                return report()
            """,
        )
    )
    expect(outcome, FailureReason.PROBE_MISSING)
    assert outcome.detail.startswith("no process carrying the echo token;")


@pytest.mark.parametrize("call", ["write", "writev"])
def test_a_query_written_on_a_connected_udp_socket_counts(run_agent: Run, call: str) -> None:
    outcome = run_agent(
        hostile(
            f"""
            def agent_main(context):
                thread_probe(context, dns=False)
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.connect(("127.0.0.1", 53))  # as Go's resolver does
                q = dns_packet(context["probe"]["dns_host"])
                os.{call}(s.fileno(), {"q" if call == "write" else "[q[:5], q[5:]]"})
                return report()
            """
        )
    )
    expect(outcome, None)


def test_a_query_written_to_a_file_is_no_lookup(run_agent: Run) -> None:
    outcome = run_agent(
        hostile(
            """
            def agent_main(context):
                thread_probe(context, dns=False)
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.connect(("127.0.0.1", 53))
                s.close()
                with open("/task/workspace/q", "wb", buffering=0) as f:  # may reuse the fd
                    f.write(dns_packet(context["probe"]["dns_host"]))
                return report()
            """
        )
    )
    expect(outcome, FailureReason.PROBE_MISSING)


def test_failing_big_iovec_sendmsgs_leave_the_rep_alone(run_agent: Run) -> None:
    outcome = run_agent(
        hostile(
            """
            def agent_main(context):
                thread_probe(context)
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                bufs = [b"A" * 4096] * 1024
                for _ in range(120):
                    try:
                        s.sendmsg(bufs, [], 0, ("127.0.0.1", 9))
                    except OSError:
                        pass  # EMSGSIZE: failed calls are not even printed
                return report()
            """
        )
    )
    expect(outcome, None)
    assert not outcome.trace.truncated


def test_a_flood_of_printed_calls_ends_the_rep_at_the_trace_cap(run_agent: Run) -> None:
    outcome = run_agent(
        hostile(
            """
            def agent_main(context):
                thread_probe(context)
                fd = os.open("/dev/null", os.O_WRONLY)
                bufs = [b"A" * 4096] * 1024
                while True:
                    os.writev(fd, bufs)  # succeeds: strace prints 256 x 256 bytes each
            """
        )
    )
    expect(outcome, FailureReason.TRACE_CAP)


def test_many_distinct_udp_peers_fill_a_capped_summary(run_agent: Run) -> None:
    outcome = run_agent(
        hostile(
            """
            def agent_main(context):
                thread_probe(context)
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                for n in range(800):  # past the summary's cap, and quick on a loaded host
                    s.sendto(b"x", (f"127.0.{n // 250}.{n % 250 + 1}", 1000 + n))
                return report()
            """
        )
    )
    # What is under test is the summary; on a loaded host the rep may meet a limit first.
    budgets = (None, FailureReason.CPU_BUDGET, FailureReason.WALL_BACKSTOP)
    assert outcome.reason in budgets, outcome.detail
    assert len(outcome.trace.connects) == PROFILES[TraceSet.LIVENESS].summary_items
    assert outcome.trace.truncated


def test_huge_failed_execs_print_nothing_for_an_agent(run_agent: Run) -> None:
    outcome = run_agent(
        hostile(
            """
            def agent_main(context):
                thread_probe(context)
                for _ in range(5):
                    try:
                        os.execv("/nonexistent", ["x" * 4096] * 4096)
                    except OSError:
                        pass
                return report()
            """
        )
    )
    expect(outcome, None)
    assert not outcome.trace.truncated
