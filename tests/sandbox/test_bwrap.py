"""The bubblewrap backend itself: soundness check, fail-closed, cleanup and sweeping."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import _register, app
from assay.sandbox import InfrastructureError
from assay.sandbox import check as check_module
from assay.sandbox.bwrap import backend as backend_module
from assay.sandbox.bwrap.backend import BwrapBackend, _cleanup, _Shape
from assay.sandbox.bwrap.cgroups import CGROUP_ROOT, CgroupV1Driver
from assay.sandbox.bwrap.hostfs import mount_tmpfs, mounts_under
from assay.sandbox.bwrap.tracer import PROFILES
from assay.sandbox.check import require_sound
from assay.sandbox.interface import InputFile, LimitHit, ResourceLimits, SealedRequest, TraceSet

pytestmark = pytest.mark.sandbox

LIMITS = ResourceLimits(
    cpu_budget_s=2.0,
    wall_backstop_s=20.0,
    memory_bytes=256 << 20,
    pids=32,
    workspace_bytes=1 << 20,
    result_bytes=1 << 16,
)
DEAD_OWNER = "999999999-1"  # no such pid: a validator that is gone


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A runtime base the unprivileged sandbox user can traverse (pytest's tmp is 0700)."""
    base = Path(tempfile.mkdtemp(prefix="assay-test-", dir="/tmp"))
    base.chmod(0o711)
    yield base / "rt"
    shutil.rmtree(base)


@pytest.fixture
def backend(runtime: Path) -> Iterator[BwrapBackend]:
    made = BwrapBackend(runtime_base=runtime)
    yield made
    made.release()
    assert mounts_under(runtime) == [] and list(runtime.iterdir()) == []


def wait_for(condition: Callable[[], object], what: str) -> None:
    """Poll a condition (not a timing assertion: the bound only stops a hung test)."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_sandbox_check_passes_here() -> None:
    _register()
    result = CliRunner().invoke(app, ["sandbox", "check", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["sound"] and all(c["ok"] for c in report["checks"])


def test_a_passing_check_is_kept_a_while_and_a_failing_one_never(
    private_backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap, strace or setpriv to be found
    with pytest.raises(InfrastructureError, match="tool: bwrap"):
        require_sound(private_backend)
    monkeypatch.setenv("PATH", path)
    passed = require_sound(private_backend)  # the failure was not kept
    assert all(r.ok for r in passed)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert require_sound(private_backend) is passed  # held sound: not run again
    monkeypatch.setattr(check_module, "SOUND_FOR_S", 0.0)
    with pytest.raises(InfrastructureError, match="tool: bwrap"):
        require_sound(private_backend)  # once the pass is too old, checked again


def test_sandbox_check_passes_from_a_directory_the_sandbox_has_too() -> None:
    # The sandbox's own /tmp is in its mount table: a validator started in the
    # host's /tmp leaks nothing by it, and must not abstain.
    result = subprocess.run(
        [sys.executable, "-P", "-m", "assay", "sandbox", "check", "--json"],
        cwd="/tmp",
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert json.loads(result.stdout)["sound"]


def test_missing_interpreter_is_an_infrastructure_error(backend: BwrapBackend) -> None:
    with pytest.raises(InfrastructureError, match="never started"):
        backend.run(SealedRequest(argv=("/nonexistent/python3", "-c", "pass"), limits=LIMITS))


# Its dead owner's groups are in the host's cgroup tree, where any validator's sweep
# (every round starts with one) may take them before this test's sweep counts them.
@pytest.mark.serial
def test_stale_cgroups_mounts_and_dirs_are_swept(runtime: Path) -> None:
    base = runtime
    stale_run = base / DEAD_OWNER / "run-stale"
    (stale_run / "workspace").mkdir(parents=True)
    mount_tmpfs(stale_run / "workspace", 1 << 20, 0, 0)
    sleeper = subprocess.Popen(["sleep", "600"])
    for controller in CgroupV1Driver.CONTROLLERS:
        group = CGROUP_ROOT / controller / "assay" / DEAD_OWNER / "run-stale"
        group.mkdir(parents=True)
        (group / "cgroup.procs").write_text(str(sleeper.pid))
    swept = BwrapBackend(runtime_base=base).sweep_stale()
    assert swept >= 2
    assert sleeper.wait() == -signal.SIGKILL
    assert not (CGROUP_ROOT / "pids" / "assay" / DEAD_OWNER).exists()
    assert mounts_under(base) == [] and not (base / DEAD_OWNER).exists()


VALIDATOR = """
import sys
from pathlib import Path
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.interface import InputFile, ResourceLimits, SealedRequest
limits = ResourceLimits(cpu_budget_s=60, wall_backstop_s=120, memory_bytes=1 << 28, pids=32,
                        workspace_bytes=1 << 20, result_bytes=1 << 16)
backend = BwrapBackend(runtime_base=Path(sys.argv[1]))
code = b"import os, time\\nos.fork()\\nprint('started', flush=True)\\ntime.sleep(600)\\n"
backend.run(SealedRequest(argv=(backend.python, "-I", "-S", "/task/input/a.py"), limits=limits,
                          inputs=(InputFile("a.py", code),)))
"""


def start_validator(base: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", VALIDATOR, str(base)])
    wait_for(lambda: list(base.glob("*/run-*/trace/t.*")), "the sandbox to start")
    return proc


def our_groups(pid: int) -> list[Path]:
    return list(CGROUP_ROOT.glob(f"pids/assay/{pid}-*/run-*"))


def test_sigterm_mid_run_cleans_up(runtime: Path) -> None:
    validator = start_validator(runtime)
    wait_for(lambda: our_groups(validator.pid), "the run's cgroup")
    group = our_groups(validator.pid)[0]
    wait_for(lambda: len((group / "cgroup.procs").read_text().split()) >= 2, "the agent's fork")
    validator.send_signal(signal.SIGTERM)
    assert validator.wait() == 128 + signal.SIGTERM
    assert not group.exists()
    assert list(runtime.glob("*/run-*")) == []
    assert mounts_under(runtime) == []


def test_a_sigkilled_validators_sandbox_dies_and_its_watchdog_clears_up(runtime: Path) -> None:
    validator = start_validator(runtime)
    wait_for(lambda: our_groups(validator.pid), "the run's cgroup")
    group = our_groups(validator.pid)[0]
    validator.kill()
    validator.wait()
    wait_for(lambda: not group.exists(), "the tree to die and its group to go")
    wait_for(lambda: list(runtime.iterdir()) == [], "the runtime directory to go")
    assert mounts_under(runtime) == []
    BwrapBackend(runtime_base=runtime).sweep_stale()  # finds nothing left to do
    assert not group.parent.exists()


ESCAPEE = """
import subprocess, sys, time
from pathlib import Path
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.bwrap.cgroups import detect_driver
from assay.sandbox.interface import ResourceLimits, SealedRequest
limits = ResourceLimits(cpu_budget_s=5, wall_backstop_s=15, memory_bytes=1 << 28, pids=32,
                        workspace_bytes=1 << 20, result_bytes=1 << 16)
backend = BwrapBackend(runtime_base=Path(sys.argv[1]))
backend.run(SealedRequest(argv=(backend.python, "-c", "pass"), limits=limits))
# A process in one of this validator's groups that no parent-death signal reaches, as
# when the validator dies before a link of the run's process chain has set its own.
group = detect_driver().create(1 << 28, 32)
stray = subprocess.Popen(["sleep", "600"], start_new_session=True)
for join in group.join_files:
    Path(join).write_text(str(stray.pid))
print(stray.pid, flush=True)
time.sleep(600)
"""


def test_the_watchdog_kills_what_no_parent_death_signal_reaches(runtime: Path) -> None:
    validator = subprocess.Popen(
        [sys.executable, "-c", ESCAPEE, str(runtime)], stdout=subprocess.PIPE
    )
    assert validator.stdout is not None
    stray = int(validator.stdout.readline())
    validator.kill()
    validator.wait()
    wait_for(lambda: not Path(f"/proc/{stray}").exists() or zombie(stray), "the stray to die")
    wait_for(lambda: list(runtime.iterdir()) == [], "the runtime directory to go")
    assert our_groups(validator.pid) == [] and mounts_under(runtime) == []


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_stdout_and_result_are_capped_but_counted(backend: BwrapBackend) -> None:
    code = (
        b"import os, sys\nsys.stdout.write('x' * 200000)\n"
        b"os.write(int(os.environ['ASSAY_RESULT_FD']), b'r' * 70000)\n"
    )
    observation = backend.run(
        SealedRequest(
            argv=(backend.python, "-I", "-S", "/task/input/a.py"),
            limits=LIMITS,
            inputs=(InputFile("a.py", code),),
        )
    )
    assert observation.exit_code == 0
    assert observation.stdout.total_bytes == 200000 and observation.stdout.truncated
    assert observation.result.total_bytes == 70000 and len(observation.result.data) == 1 << 16
    assert os.environ.get("ASSAY_RESULT_FD") is None


QUICK_VALIDATOR = """
import sys
from pathlib import Path
from assay.sandbox.bwrap import BwrapBackend
from assay.sandbox.interface import ResourceLimits, SealedRequest
limits = ResourceLimits(cpu_budget_s=5, wall_backstop_s=15, memory_bytes=1 << 28, pids=32,
                        workspace_bytes=1 << 20, result_bytes=1 << 16)
backend = BwrapBackend(runtime_base=Path(sys.argv[1]))
observation = backend.run(SealedRequest(argv=(backend.python, "-c", "pass"), limits=limits))
print(observation.exit_code)
"""


def processes_naming(path: Path) -> list[str]:
    """Command lines of live (not zombie) processes with an argument under `path`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(a.startswith(str(path).encode()) for a in argv[1:]):
            found.append(b" ".join(argv)[:200].decode(errors="replace"))
    return found


def test_a_validator_that_exits_leaves_nothing_behind(runtime: Path) -> None:
    for _ in range(3):  # its prestarted tracer dies with its janitor thread, at any moment
        validator = subprocess.Popen(
            [sys.executable, "-c", QUICK_VALIDATOR, str(runtime)], stdout=subprocess.PIPE
        )
        stdout, _ = validator.communicate()
        assert validator.returncode == 0 and stdout.strip() == b"0"
        assert list(runtime.iterdir()) == []
        assert list(CGROUP_ROOT.glob(f"*/assay/{validator.pid}-*")) == []
        assert processes_naming(runtime) == []


def test_a_tracer_killed_before_it_attached_leaves_no_stopped_child(runtime: Path) -> None:
    """strace's first child stops itself until strace attaches; if strace dies
    first (its parent thread ended), that child must not be left stopped forever."""
    backend = BwrapBackend(runtime_base=runtime, prestart=False)
    request = SealedRequest(argv=(backend.python, "-c", "pass"), limits=LIMITS)
    for n in range(20):
        run = backend._start(_Shape.of(request))
        time.sleep(n * 0.0005)  # at every stage of strace's start-up
        os.kill(run.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        time.sleep(0.02)
        _cleanup(run)
        assert processes_naming(run.run_dir) == []
    backend.release()


def stopped_fake(argv0: str, names: Path) -> subprocess.Popen[bytes]:
    """A process that stops itself, with argv[0] `argv0` and an argument naming `names`."""
    code = "import os, signal; os.kill(os.getpid(), signal.SIGSTOP)"
    process = subprocess.Popen([argv0, "-c", code, "-o", str(names)], executable=sys.executable)
    wait_for(lambda: Path(f"/proc/{process.pid}/stat").read_text().split()[2] == "T", "a stop")
    return process


def test_sweep_kills_the_stopped_tracers_of_a_dead_validator(runtime: Path) -> None:
    live_owner = f"{os.getpid()}-{Path('/proc/self/stat').read_text().split()[21]}"
    dead_tracer = stopped_fake("strace", runtime / DEAD_OWNER / "run-1" / "trace" / "t")
    live_tracer = stopped_fake("strace", runtime / live_owner / "run-1" / "trace" / "t")
    bystander = stopped_fake("python3", runtime / DEAD_OWNER / "run-1" / "trace" / "t")
    # The dead validator's directory is gone already (an older sweeper removed it).
    (runtime / live_owner / "run-1" / "trace").mkdir(parents=True)
    try:
        BwrapBackend(runtime_base=runtime).sweep_stale()
        assert dead_tracer.wait(timeout=10) == -signal.SIGKILL
        assert live_tracer.poll() is None and bystander.poll() is None
    finally:
        for process in (dead_tracer, live_tracer, bystander):
            process.kill()
            process.wait()
        shutil.rmtree(runtime / live_owner)


def test_prestarted_sandbox_gets_the_next_request(backend: BwrapBackend, tmp_path: Path) -> None:
    """The second run is served by the sandbox started after the first: it still sees
    its own inputs and artifact (bound after the sandbox was set up) and nothing else."""
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "SKILL.md").write_text("hello from the artifact")
    code = (
        b"import os\n"
        b"mounts = [l.split() for l in open('/proc/self/mountinfo')]\n"
        b"ro = 'ro' in [m[5] for m in mounts if m[4] == '/task/artifact'][-1].split(',')\n"
        b"print(open('/task/artifact/SKILL.md').read(), open('/task/input/n').read(),\n"
        b"      sorted(os.listdir('/task/workspace')), ro)\n"
        b"open('/task/workspace/left-behind', 'w').write('x')\n"
    )
    for n in range(3):
        # Give the prestarted sandbox time to finish its mounts, so the artifact
        # reaches it by propagation (the first run binds it before bubblewrap does).
        time.sleep(0.5 * n)
        observation = backend.run(
            SealedRequest(
                argv=(backend.python, "-I", "-S", "/task/input/a.py"),
                limits=LIMITS,
                inputs=(InputFile("a.py", code), InputFile("n", str(n).encode())),
                artifact_dir=str(artifact),
            )
        )
        assert observation.stdout.data == f"hello from the artifact {n} [] True\n".encode()
    other = backend.run(SealedRequest(argv=(backend.python, "-c", "print(1)"), limits=LIMITS))
    assert other.stdout.data == b"1\n"


def test_one_more_sandbox_than_runs_at_once_is_kept_started(
    backend: BwrapBackend, runtime: Path
) -> None:
    """So a run takes a sandbox that had a whole run's time to start, not one started
    just after the previous run (still starting when the next run comes)."""
    request = SealedRequest(argv=(backend.python, "-c", "print(1)"), limits=LIMITS)

    def started() -> int:
        return sum(1 for _ in runtime.glob("*/run-*"))

    backend.run(request)
    wait_for(lambda: started() == 2, "two started sandboxes after a run")
    slow = SealedRequest(
        argv=(backend.python, "-c", "import time; time.sleep(0.5); print(1)"), limits=LIMITS
    )
    with ThreadPoolExecutor(2) as pool:
        barrier = threading.Barrier(2)

        def run_together(_: int) -> bytes:
            barrier.wait()
            return backend.run(slow).stdout.data

        assert list(pool.map(run_together, range(2))) == [b"1\n"] * 2
    wait_for(lambda: started() == 3, "three started sandboxes after two runs at once")
    time.sleep(0.5)
    assert started() == 3, "no more than one past the runs at once"


def test_output_a_byte_at_a_time_does_not_run_the_limits_gate_per_write(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each gate check costs the validator ~0.4 ms: the gate runs on its own schedule
    and as the tree ends, not on every wake for output."""
    checks = 0
    make_check = backend_module._limits_check

    def counting(*args: Any, **kwargs: Any) -> Callable[[], LimitHit | float]:
        check = make_check(*args, **kwargs)

        def counted() -> LimitHit | float:
            nonlocal checks
            checks += 1
            return check()

        return counted

    monkeypatch.setattr(backend_module, "_limits_check", counting)
    code = "import os, time\nfor _ in range(300):\n    os.write(2, b'x')\n    time.sleep(0.001)\n"
    observation = backend.run(SealedRequest(argv=(backend.python, "-c", code), limits=LIMITS))
    assert observation.exit_code == 0 and observation.stderr.total_bytes == 300
    # 300 writes spread over ~0.4 s; the gate's own schedule is every 0.2 s this far
    # from every limit (the first check at 4 ms, one more as the tree ends).
    assert 0 < checks < 30, checks


def test_output_a_byte_at_a_time_is_drained_in_batches_and_kept_whole(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After draining, the validator waits on the tree's exit alone for a few ms before
    watching the pipes again: far fewer wakes than writes, and not a byte lost."""
    drains = 0
    drain = backend_module._Capture.drain

    def counting(self: Any) -> bool:
        nonlocal drains
        drains += 1
        return bool(drain(self))

    monkeypatch.setattr(backend_module._Capture, "drain", counting)
    code = "import os, time\nfor n in range(1000):\n    os.write(2, b'%d' % (n % 10))\n"
    code += "    time.sleep(0.001)\n"
    observation = backend.run(SealedRequest(argv=(backend.python, "-c", code), limits=LIMITS))
    assert observation.exit_code == 0
    assert observation.stderr.data == b"0123456789" * 100
    assert drains <= 500, drains  # one a write without the batching


def test_the_capture_pipes_are_widened(backend: BwrapBackend) -> None:
    code = (
        "import fcntl, os\n"
        "fds = (1, 2, int(os.environ['ASSAY_RESULT_FD']))\n"
        "print(*(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) for fd in fds))\n"
    )
    observation = backend.run(SealedRequest(argv=(backend.python, "-c", code), limits=LIMITS))
    assert observation.stdout.data.split() == [str(backend_module.PIPE_BYTES).encode()] * 3


def test_concurrent_runs_share_one_backend(backend: BwrapBackend) -> None:
    def run(n: int) -> bytes:
        request = SealedRequest(
            argv=(backend.python, "-I", "-S", "-c", "import sys; print(sys.argv)"),
            limits=LIMITS,
            inputs=(InputFile("n", str(n).encode()),),
        )
        return backend.run(request).stdout.data

    with ThreadPoolExecutor(2) as pool:
        outputs = list(pool.map(run, range(6)))
    assert outputs == [b"['-c']\n"] * 6


def test_a_full_trace_of_many_distinct_opens_is_capped(backend: BwrapBackend) -> None:
    code = (
        b"for n in range(3000):\n"
        b"    try:\n"
        b"        open(f'/tmp/{n:05d}' + 'x' * 200)\n"
        b"    except OSError:\n"
        b"        pass\n"
    )
    request = SealedRequest(
        argv=(backend.python, "-I", "-S", "/task/input/a.py"),
        limits=LIMITS,
        inputs=(InputFile("a.py", code),),
        trace=TraceSet.FULL,
    )
    observation = backend.run(request)
    assert observation.exit_code == 0 and observation.limit_hit is None
    assert len(observation.trace.reads) == PROFILES[TraceSet.FULL].summary_items
    assert observation.trace.truncated
    assert observation.tracer_cpu_s > 0
    assert observation.cpu_s > observation.tracer_cpu_s


def test_a_trace_past_its_cap_ends_the_run(backend: BwrapBackend) -> None:
    code = (
        b"n = 0\nwhile True:\n    n += 1\n"
        b"    try:\n        open(f'/tmp/{n}' + 'x' * 3000)\n    except OSError:\n        pass\n"
    )
    limits = dataclasses.replace(LIMITS, trace_bytes=1 << 20)
    request = SealedRequest(
        argv=(backend.python, "-I", "-S", "/task/input/a.py"),
        limits=limits,
        inputs=(InputFile("a.py", code),),
        trace=TraceSet.FULL,
    )
    observation = backend.run(request)
    assert observation.limit_hit is LimitHit.TRACE_CAP
    assert observation.trace.reads  # what came before the cap is still evidence
