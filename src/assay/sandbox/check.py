"""`assay sandbox check`: prove on this host that the sandbox is sound.

Runs a small inspection program inside a real sandbox and checks, from both
sides, what a round relies on: the tools exist, namespaces and uid are as
configured, seccomp refuses what it must, no network route leads out, the host
tree is invisible, the tracer sees execs and DNS queries, cgroup CPU accounting
counts and enforces, and copy-out refuses a planted symlink.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from assay.sandbox.interface import (
    CheckResult,
    CopyStatus,
    InfrastructureError,
    InputFile,
    LimitHit,
    Observation,
    ResourceLimits,
    SandboxBackend,
    SealedRequest,
)

ECHO_TOKEN = "assay-check-echo-7f3a"
ARTIFACT_FILE = "marker.txt"
ARTIFACT_TEXT = "assay-check-artifact"
DNS_NAME = "check.probe.assay.invalid"

_NAMESPACES = ("user", "pid", "net", "ipc", "uts", "cgroup", "mnt")

# Runs inside the sandbox; prints one JSON object of facts for the host to judge.
_INSPECT = f"""
import ctypes, errno, json, os, socket, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)

def refused(call):
    ctypes.set_errno(0)
    return call() == -1 and ctypes.get_errno() in (errno.EPERM, errno.ENOSYS)

facts = {{
    "uid": os.getuid(),
    "pid": os.getpid(),
    "cap_eff": [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0],
    "namespaces": {{n: os.readlink(f"/proc/self/ns/{{n}}") for n in {_NAMESPACES!r}}},
    "env": sorted(os.environ),
    "interfaces": sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]),
    "routes": len(open("/proc/net/route").readlines()) - 1,
    "host_paths": [p for p in ("/root", "/home", "/work", "/var", "/run") if os.path.exists(p)],
    "artifact": open("/task/artifact/{ARTIFACT_FILE}").read(),
    "artifact_options": [l.split()[5] for l in open("/proc/self/mountinfo")
                         if l.split()[4] == "/task/artifact"][-1],
    "ptrace_refused": refused(lambda: libc.ptrace(16, 1, 0, 0)),
    "unshare_refused": refused(lambda: libc.unshare(0x10000000)),
    "mount_refused": refused(lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
    "bpf_refused": refused(lambda: libc.syscall(321, 0, 0, 0)),
}}
try:
    socket.getaddrinfo("{DNS_NAME}", 80)
except OSError:
    pass
subprocess.run(["echo", "{ECHO_TOKEN}"], capture_output=True)
open("/task/workspace/plain", "w").write("plain")
os.symlink("/etc/passwd", "/task/workspace/link")
end = time.process_time() + 0.05
while time.process_time() < end:
    pass
print(json.dumps(facts))
"""

_LIMITS = ResourceLimits(
    cpu_budget_s=5.0,
    wall_backstop_s=15.0,
    memory_bytes=256 << 20,
    pids=32,
    workspace_bytes=1 << 20,
    result_bytes=1 << 16,
)

# Programs that must each be stopped by one limit: (limit, program, tightened limits).
_BREACHES = (
    (LimitHit.CPU_BUDGET, "while True:\n    pass\n", {"cpu_budget_s": 0.2}),
    (LimitHit.MEMORY, "blob = b'x' * (256 << 20)\n", {"memory_bytes": 32 << 20}),
    (
        LimitHit.PIDS,
        "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(60)\n",
        {"pids": 8},
    ),
)


class _Facts(BaseModel):
    """What the inspection program reports from inside the sandbox."""

    uid: int
    pid: int
    cap_eff: str
    namespaces: dict[str, str]
    env: list[str]
    interfaces: list[str]
    routes: int
    host_paths: list[str]
    artifact: str
    artifact_options: str  # of the top-most mount at /task/artifact
    ptrace_refused: bool
    unshare_refused: bool
    mount_refused: bool
    bpf_refused: bool


def _inspect(backend: SandboxBackend) -> tuple[Observation, _Facts]:
    with tempfile.TemporaryDirectory() as artifact:
        os.chmod(artifact, 0o755)
        Path(artifact, ARTIFACT_FILE).write_text(ARTIFACT_TEXT)
        request = SealedRequest(
            argv=(backend.python, "-I", "-S", "/task/input/inspect.py"),
            limits=_LIMITS,
            inputs=(InputFile("inspect.py", _INSPECT.encode()),),
            artifact_dir=artifact,
            copy_out=("plain", "link"),
        )
        observation = backend.run(request)
    try:
        facts = _Facts.model_validate_json(observation.stdout.data)
    except ValidationError as exc:
        stderr = observation.stderr.data.decode(errors="replace")[-500:]
        raise InfrastructureError(f"inspection program failed: {stderr}") from exc
    return observation, facts


# LC_CTYPE: Python coerces the C locale to C.UTF-8 (PEP 538) and exports it.
_SANDBOX_ENV = {"ASSAY_RESULT_FD", "HOME", "LC_CTYPE", "PATH", "PWD"}


def _judge(observation: Observation, facts: _Facts) -> list[CheckResult]:
    def check(name: str, ok: bool, detail: object) -> CheckResult:
        return CheckResult(name, ok, str(detail))

    copied = {c.name: c.status for c in observation.copied}
    shared = [
        n for n in _NAMESPACES if facts.namespaces.get(n) == os.readlink(f"/proc/self/ns/{n}")
    ]
    trace = observation.trace
    return [
        check("namespaces unshared", not shared, f"shared: {shared}" if shared else "all"),
        check("non-root uid", facts.uid != 0, f"uid {facts.uid}"),
        check("pid namespace", facts.pid < 10, f"pid {facts.pid}"),
        check("capabilities dropped", int(facts.cap_eff, 16) == 0, facts.cap_eff),
        check("seccomp: ptrace refused", facts.ptrace_refused, facts.ptrace_refused),
        check("seccomp: unshare refused", facts.unshare_refused, facts.unshare_refused),
        check("seccomp: mount refused", facts.mount_refused, facts.mount_refused),
        check("seccomp: bpf refused", facts.bpf_refused, facts.bpf_refused),
        check("loopback only", facts.interfaces == ["lo"], facts.interfaces),
        check("no route out", facts.routes == 0, f"{facts.routes} routes"),
        check("host tree invisible", facts.host_paths == [], facts.host_paths),
        check("artifact visible", facts.artifact == ARTIFACT_TEXT, facts.artifact),
        check(
            "artifact read-only",
            "ro" in facts.artifact_options.split(","),
            facts.artifact_options,
        ),
        check("environment cleared", set(facts.env) <= _SANDBOX_ENV, facts.env),
        check("tracer sees execve argv", trace.saw_exec_with(ECHO_TOKEN), ECHO_TOKEN),
        check("tracer sees DNS queries", trace.saw_dns(DNS_NAME), DNS_NAME),
        check("cgroup CPU accounting", observation.cpu_s >= 0.05, f"{observation.cpu_s:.3f} s"),
        check("copy-out: regular file", copied.get("plain") is CopyStatus.OK, copied.get("plain")),
        check(
            "copy-out: symlink refused",
            copied.get("link") is CopyStatus.NOT_REGULAR,
            copied.get("link"),
        ),
    ]


def _limits_enforced(backend: SandboxBackend) -> list[CheckResult]:
    results = []
    for limit, program, tightened in _BREACHES:
        request = SealedRequest(
            argv=(backend.python, "-I", "-S", "/task/input/breach.py"),
            limits=dataclasses.replace(_LIMITS, **tightened),
            inputs=(InputFile("breach.py", program.encode()),),
        )
        hit = backend.run(request).limit_hit
        results.append(CheckResult(f"{limit} limit enforced", hit is limit, f"stopped by {hit}"))
    return results


def _tools() -> list[CheckResult]:
    return [
        CheckResult(
            f"tool: {tool}", shutil.which(tool) is not None, shutil.which(tool) or "missing"
        )
        for tool in ("bwrap", "strace", "setpriv")
    ]


def _guarded(name: str, step: Callable[[], list[CheckResult]]) -> list[CheckResult]:
    try:
        return step()
    except (InfrastructureError, OSError, ValueError) as exc:
        return [CheckResult(name, False, str(exc))]


def run_checks(backend: SandboxBackend) -> tuple[CheckResult, ...]:
    results = _tools()
    if not all(r.ok for r in results):
        return tuple(results)
    started = time.monotonic()
    results += _guarded("sandbox runs", lambda: _judge(*_inspect(backend)))
    results += _guarded("limits enforced", lambda: _limits_enforced(backend))
    results.append(CheckResult("check duration", True, f"{time.monotonic() - started:.2f} s"))
    return tuple(results)


def require_sound(backend: SandboxBackend) -> tuple[CheckResult, ...]:
    """Run the checks; raise `InfrastructureError` naming every failure (rounds abstain)."""
    results = backend.check()
    failed = [r for r in results if not r.ok]
    if failed:
        reasons = "; ".join(f"{r.name}: {r.detail}" for r in failed)
        raise InfrastructureError(f"sandbox unsound: {reasons}")
    return results
