"""Hostile agents against the real sandbox: each fails (or is contained) for the right reason."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from assay.mechanism.spec import Track
from assay.records.outcome import FailureReason, RunOutcome, RunStatus

pytestmark = pytest.mark.sandbox
Run = Callable[..., RunOutcome]


def expect(outcome: RunOutcome, reason: FailureReason | None) -> None:
    assert outcome.reason == reason, (outcome.detail, outcome.stderr_tail)
    assert outcome.status == (RunStatus.COMPLETED if reason is None else RunStatus.FAILED)


def test_well_behaved_agent_passes_every_gate(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            return report("BLOCK")
        """
    )
    expect(outcome, None)
    assert outcome.decision == "BLOCK"
    assert outcome.probe is not None and outcome.probe.passed
    assert outcome.cpu_s > 0 and outcome.peak_memory_bytes > 0


@pytest.mark.parametrize("skipped", ["dns", "echo", "file"])
def test_skipping_one_probe_step_fails_liveness(run_agent: Run, skipped: str) -> None:
    outcome = run_agent(
        f"""
        def agent_main(context):
            thread_probe(context, {skipped}=False)
            return report()
        """
    )
    expect(outcome, FailureReason.PROBE_MISSING)


def test_probe_claimed_in_report_but_never_performed(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            p = context["probe"]
            return report(probe={"file": p["file_content"], "dns": p["dns_host"],
                                 "echo": p["process_echo"], "done": True})
        """
    )
    expect(outcome, FailureReason.PROBE_MISSING)


def test_probe_file_as_symlink_is_refused(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context, file=False)
            p = context["probe"]
            with open("/task/workspace/real", "w") as f:
                f.write(p["file_content"])
            os.symlink("/task/workspace/real", p["file_path"])
            return report()
        """
    )
    expect(outcome, FailureReason.PROBE_MISSING)
    assert outcome.probe is not None and outcome.probe.file_status == "not_regular"


def test_repositories_need_no_probe(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            assert context["probe"] is None
            return {"verdict": {"decision": "WARN", "risk_score": 50, "confidence": 0.5},
                    "evidence": {"audit": {"files_analysed": 1, "lines_analysed": 10},
                                 "vulnerabilities": []}}
        """,
        track=Track.REPOSITORIES,
    )
    expect(outcome, None)


def test_fork_bomb_hits_the_pid_limit(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        """
    )
    expect(outcome, FailureReason.PIDS)


def test_a_refused_fork_fails_the_rep_though_the_agent_recovers_and_ends_at_once(
    run_agent: Run,
) -> None:
    # The children wait on a pipe, so the tree ends right after the refused fork, long
    # before the next timed poll (0.2 s apart when far from the CPU budget): the check
    # made as the run's report arrives and as its tree ends must still see it.
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            hold, release = os.pipe()
            while True:
                try:
                    if os.fork() == 0:
                        os.close(release)
                        os.read(hold, 1)
                        os._exit(0)
                except OSError:
                    break
            os.close(release)
            return report("ALLOW")
        """
    )
    expect(outcome, FailureReason.PIDS)


def test_cpu_spread_over_eight_children_is_billed_to_the_tree(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            for _ in range(8):
                if os.fork() == 0:
                    while True:
                        pass
            os.wait()
            return report()
        """
    )
    # The agent itself only waits: the rep can fail for its CPU budget only if its
    # children's CPU is billed to it. On a loaded host the tree may get less than its
    # budget of CPU within the wall backstop (3 s for 1 s of CPU): that is the same
    # failure for its budget, decided by which limit the validator saw trip first.
    assert outcome.status == RunStatus.FAILED
    assert outcome.reason in (FailureReason.CPU_BUDGET, FailureReason.WALL_BACKSTOP), (
        outcome.detail,
        outcome.stderr_tail,
    )
    if outcome.reason is FailureReason.CPU_BUDGET:
        assert outcome.cpu_s >= 1.0, "billed past the 1 s budget, by the children alone"


def test_sleeping_forever_hits_the_wall_backstop(run_agent: Run) -> None:
    outcome = run_agent(
        """
        import time
        def agent_main(context):
            time.sleep(10**6)
        """
    )
    expect(outcome, FailureReason.WALL_BACKSTOP)
    assert "stopped by the wall-clock backstop, not the CPU budget" in outcome.detail
    assert outcome.detail.endswith(
        "it was waiting (sleeping, or blocked on a file, a process or the network)"
    )


def test_allocating_4_gib_hits_the_memory_limit(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            blob = b"x" * (4 << 30)
            return report(size=len(blob))
        """
    )
    expect(outcome, FailureReason.MEMORY)


def test_writes_outside_the_workspace_do_not_reach_the_host(run_agent: Run, tmp_path: Path) -> None:
    target = tmp_path / "host-file"
    target.write_text("original")
    outcome = run_agent(
        f"""
        def agent_main(context):
            thread_probe(context)
            results = {{}}
            for path in [{str(target)!r}, {str(tmp_path / "new")!r}, "/usr/bin/evil",
                         "/etc/passwd", "/task/artifact/SKILL.md", "/task/input/shim.py"]:
                try:
                    with open(path, "w") as f:
                        f.write("pwned")
                    results[path] = "written"
                except OSError as exc:
                    results[path] = type(exc).__name__
            return report(results=results)
        """
    )
    expect(outcome, None)
    assert target.read_text() == "original"
    assert not (tmp_path / "new").exists()
    assert outcome.report is not None
    assert "written" not in (outcome.report.model_extra or {})["results"].values()


def test_reading_a_planted_host_file_fails(run_agent: Run, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    outcome = run_agent(
        f"""
        def agent_main(context):
            thread_probe(context)
            try:
                data = open({str(secret)!r}).read()
            except OSError as exc:
                data = type(exc).__name__
            print(data)
            return report(data=data)
        """
    )
    expect(outcome, None)
    assert "TOP-SECRET" not in outcome.to_json()


@pytest.fixture
def tcp_server() -> Iterator[tuple[int, list[object]]]:
    accepted: list[object] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def test_host_loopback_server_sees_no_connection(
    run_agent: Run, tcp_server: tuple[int, list[object]]
) -> None:
    port, accepted = tcp_server
    outcome = run_agent(
        f"""
        def agent_main(context):
            thread_probe(context)
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
                result = "connected"
            except OSError as exc:
                result = type(exc).__name__
            return report(result=result)
        """
    )
    expect(outcome, None)
    assert accepted == []
    assert outcome.report is not None
    assert (outcome.report.model_extra or {})["result"] != "connected"
    # An agent's rep records only calls that succeeded; this connect never did.
    assert not any(p.port == port for p in outcome.trace.connects)


def test_killing_parent_and_own_group_is_a_crash(run_agent: Run) -> None:
    outcome = run_agent(
        """
        import signal
        def agent_main(context):
            thread_probe(context)
            try:
                os.kill(os.getppid(), signal.SIGKILL)
            except OSError:
                pass
            os.killpg(0, signal.SIGKILL)
        """
    )
    expect(outcome, FailureReason.CRASH)


def test_100_mb_on_stdout_is_drained_and_capped(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            chunk = "x" * (1 << 20)
            for _ in range(100):
                sys.stdout.write(chunk)
            sys.stdout.flush()
            return report()
        """
    )
    expect(outcome, None)
    assert outcome.stdout_bytes == 100 << 20


def test_50_mb_report_is_malformed(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            return report(padding="x" * (50 << 20))
        """
    )
    expect(outcome, FailureReason.MALFORMED_REPORT)


def test_50_mb_written_straight_to_the_result_channel_is_malformed(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            def is_pipe(n):
                try:
                    return os.readlink(f"/proc/self/fd/{n}").startswith("pipe:")
                except OSError:
                    return False
            fd = next(n for n in map(int, os.listdir("/proc/self/fd")) if n > 2 and is_pipe(n))
            for _ in range(50):
                os.write(fd, b" " * (1 << 20))
            os._exit(0)
        """
    )
    expect(outcome, FailureReason.MALFORMED_REPORT)


def test_json_nested_100000_deep_is_malformed(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            deep = []
            for _ in range(100000):
                deep = [deep]
            return report(deep=deep)
        """
    )
    expect(outcome, FailureReason.MALFORMED_REPORT)


def test_verdict_outside_the_vocabulary_is_malformed(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            return report("MAYBE")
        """
    )
    expect(outcome, FailureReason.MALFORMED_REPORT)


def test_os_exit_without_report(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            thread_probe(context)
            os._exit(0)
        """
    )
    expect(outcome, FailureReason.NO_REPORT)


def test_raising_agent_crashes(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def agent_main(context):
            raise RuntimeError("boom")
        """
    )
    expect(outcome, FailureReason.CRASH)
    assert "boom" in outcome.stderr_tail


def test_agent_file_over_256_kib_is_invalid(run_agent: Run) -> None:
    padding = "# " + "x" * (256 * 1024) + "\n"
    outcome = run_agent(padding + "def agent_main(context):\n    return {}\n")
    expect(outcome, FailureReason.AGENT_INVALID)


def test_missing_entrypoint_is_invalid(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def main(context):
            return report()
        """
    )
    expect(outcome, FailureReason.AGENT_INVALID)


def test_declared_entrypoint_is_used(run_agent: Run) -> None:
    outcome = run_agent(
        """
        def audit(context):
            thread_probe(context)
            return report()
        """,
        entrypoint="audit",
    )
    expect(outcome, None)


@pytest.mark.parametrize(
    ("payload", "detail"),
    [
        ('"n": ' + "9" * 5000, "outside 64 bits"),
        ('"s": "\\ud800"', "surrogate"),
        ('"e\\u0301": 1, "\\u00e9": 2', "collide"),
        ('"x": 1e999', "not a JSON number"),
    ],
)
def test_unsignable_report_written_straight_to_the_channel_is_malformed(
    run_agent: Run, payload: str, detail: str
) -> None:
    """Bytes the shim would never encode, written past it: the rep fails, nothing raises."""
    outcome = run_agent(
        f"""
        import stat

        def agent_main(context):
            thread_probe(context)
            body = json.dumps(report())[:-1] + ", " + {payload!r} + "}}"
            # The channel keeps the validator's descriptor number, which grows with
            # the sandboxes it keeps started: look at every open descriptor.
            for fd in sorted(int(n) for n in os.listdir("/proc/self/fd") if int(n) > 2):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode):
                        os.write(fd, body.encode())
                except OSError:
                    pass
            os._exit(0)
        """
    )
    expect(outcome, FailureReason.MALFORMED_REPORT)
    assert detail in outcome.detail
    RunOutcome.from_json(outcome.to_json())  # what is stored reads back
