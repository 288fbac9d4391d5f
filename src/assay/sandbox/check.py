"""`assay sandbox check`: prove on this host that the sandbox is sound.

Runs a small inspection program inside a real sandbox and checks, from both
sides, what a round relies on: the tools exist, namespaces and uid are as
configured, seccomp refuses what it must (vsock and other socket families
included), no network route leads out, the host tree is invisible, no /proc view
names a host path (the artifact's, the run's, the validator's working
directory), all it can write is capped at the workspace's size, the agents'
runtime imports, the tracer sees execs and DNS queries, cgroup CPU accounting
counts and enforces, and copy-out refuses a planted symlink.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ValidationError

from assay.sandbox.interface import (
    SANDBOX_ARTIFACT_DIR,
    SANDBOX_INPUT_DIR,
    SANDBOX_TASK_DIR,
    SANDBOX_WORKSPACE_DIR,
    CheckResult,
    CopyStatus,
    InfrastructureError,
    InputFile,
    LimitHit,
    Observation,
    ObserverKind,
    ResourceLimits,
    SandboxBackend,
    SealedRequest,
)
from assay.sandbox.runtime import AGENT_RUNTIME_MODULES

ECHO_TOKEN = "assay-check-echo-7f3a"
ARTIFACT_FILE = "marker.txt"
ARTIFACT_TEXT = "assay-check-artifact"
DNS_NAME = "check.probe.assay.invalid"
VIEWS_FILE = "proc-views.json"

_NAMESPACES = ("user", "pid", "net", "ipc", "uts", "cgroup", "mnt")
_ALLOWED_FAMILIES = ("AF_INET", "AF_INET6", "AF_NETLINK", "AF_UNIX")
_REFUSED_FAMILIES = ("AF_VSOCK", "AF_PACKET", "AF_ALG", "AF_BLUETOOTH", "AF_CAN", "AF_TIPC")
_FAMILIES = _ALLOWED_FAMILIES + _REFUSED_FAMILIES
_READ_ONLY = ("/", "/dev", "/etc", "/task", "/task/artifact")

# Runs inside the sandbox; prints one JSON object of facts for the host to judge.
# Its arguments are the directories the shim would put on sys.path.
_INSPECT = f"""
import ctypes, errno, glob, importlib, json, os, socket, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
sys.path.extend(sys.argv[1:])

def refused(call):
    ctypes.set_errno(0)
    return call() == -1 and ctypes.get_errno() in (errno.EPERM, errno.ENOSYS)

def attempt(call):
    try:
        value = call()
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)
    return "ok" if value is None else "ok: " + repr(value)

def opened(family):
    # A socket type each family takes, so only a refusal of the family fails.
    kind = {{"AF_NETLINK": socket.SOCK_DGRAM, "AF_ALG": socket.SOCK_SEQPACKET}}
    with socket.socket(getattr(socket, family), kind.get(family, socket.SOCK_STREAM)):
        pass

def written(directory):
    with open(os.path.join(directory, "assay-check-write"), "w"):
        pass

def views():
    # Everything under /proc that could name a host path: mount tables, memory
    # maps, command lines, environments and every link, of every process in view.
    # Written to the workspace and copied out: too big for stdout's cap.
    seen = {{}}
    for proc in ["/proc/self", *sorted(glob.glob("/proc/[0-9]*"))]:
        for name in ("mountinfo", "mounts", "mountstats", "maps", "cmdline", "environ", "cgroup"):
            try:
                seen[f"{{proc}}/{{name}}"] = open(f"{{proc}}/{{name}}", "rb").read().decode(
                    errors="replace")
            except OSError as exc:
                seen[f"{{proc}}/{{name}}"] = str(exc)
        links = glob.glob(f"{{proc}}/fd/*") + glob.glob(f"{{proc}}/map_files/*")
        for link in ["cwd", "root", "exe", *links]:
            path = link if link.startswith("/") else f"{{proc}}/{{link}}"
            try:
                seen[path] = os.readlink(path)
            except OSError as exc:
                seen[path] = str(exc)
    with open("/task/workspace/{VIEWS_FILE}", "w") as out:
        json.dump(seen, out)

def writable_bytes():
    # Distinct file systems behind directories mounted read-write (proc and
    # devpts hold no data; device nodes are bound as files, not directories).
    sizes = {{}}
    for line in open("/proc/self/mountinfo"):
        fields, fstype = line.split(" - ")[0].split(), line.split(" - ")[1].split()[0]
        point = fields[4].replace("\\\\040", " ")
        if "rw" in fields[5].split(",") and fstype not in ("proc", "devpts"):
            if os.path.isdir(point):
                st = os.statvfs(point)
                sizes[fields[2]] = st.f_blocks * st.f_frsize
    return sum(sizes.values())

def runtime(name):
    try:
        return importlib.import_module(name).__version__
    except Exception as exc:
        return "not importable: " + type(exc).__name__ + ": " + str(exc)

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
    "families": {{f: attempt(lambda: opened(f)) for f in {_FAMILIES!r}}},
    "interface_names": attempt(socket.if_nameindex),
    "writes": {{d: attempt(lambda: written(d)) for d in {_READ_ONLY!r}}},
    "writable_bytes": writable_bytes(),
    "runtime": {{m: runtime(m) for m in {AGENT_RUNTIME_MODULES!r}}},
}}
try:
    socket.getaddrinfo("{DNS_NAME}", 80)
except OSError:
    pass
subprocess.run(["echo", "{ECHO_TOKEN}"], capture_output=True)
views()
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
    families: dict[str, str]  # "ok" or why socket() failed
    interface_names: str
    writes: dict[str, str]
    writable_bytes: int
    runtime: dict[str, str]


def _inspect(backend: SandboxBackend) -> tuple[Observation, _Facts, tuple[str, ...]]:
    """Run the inspection; also returns the host paths no view inside may name."""
    # Named like a corpus task, so a view that shows it is a view that leaks one.
    with tempfile.TemporaryDirectory(prefix="assay-check-task-malicious-") as artifact:
        os.chmod(artifact, 0o755)
        Path(artifact, ARTIFACT_FILE).write_text(ARTIFACT_TEXT)
        cwd = os.getcwd()
        hidden = (artifact, Path(artifact).name, *backend.private_paths)
        hidden += (cwd,) if _tells_the_sandbox_something(cwd) else ()
        request = SealedRequest(
            argv=(backend.python, "-I", "-S", "/task/input/inspect.py", *backend.python_path),
            limits=_LIMITS,
            inputs=(InputFile("inspect.py", _INSPECT.encode()),),
            artifact_dir=artifact,
            copy_out=("plain", "link", VIEWS_FILE),
        )
        observation = backend.run(request)
    try:
        facts = _Facts.model_validate_json(observation.stdout.data)
    except ValidationError as exc:
        stderr = observation.stderr.data.decode(errors="replace")[-500:]
        raise InfrastructureError(f"inspection program failed: {stderr}") from exc
    return observation, facts, hidden


# Paths every sandbox has by the same name (its own mounts, and the host's /usr
# bound where it is): a validator working in one of them names nothing the
# sandbox does not see anyway, and the text of the views cannot tell them apart.
_SANDBOX_OWN_PATHS = frozenset(
    {"/", "/tmp", "/etc", "/dev", "/dev/shm", "/proc", SANDBOX_TASK_DIR, SANDBOX_INPUT_DIR}
    | {SANDBOX_ARTIFACT_DIR, SANDBOX_WORKSPACE_DIR}
)


def _tells_the_sandbox_something(host_path: str) -> bool:
    path = PurePosixPath(host_path)
    return str(path) not in _SANDBOX_OWN_PATHS and not path.is_relative_to("/usr")


def _views(observation: Observation) -> dict[str, str]:
    """The /proc views the inspection copied out ({} when it could not)."""
    copied = observation.copied_file(VIEWS_FILE)
    try:
        views = json.loads(copied.data) if copied.status is CopyStatus.OK else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in views.items()} if isinstance(views, dict) else {}


# LC_CTYPE: Python coerces the C locale to C.UTF-8 (PEP 538) and exports it.
_SANDBOX_ENV = {"ASSAY_RESULT_FD", "HOME", "LC_CTYPE", "PATH", "PWD"}


def _judge(observation: Observation, facts: _Facts, hidden: tuple[str, ...]) -> list[CheckResult]:
    def check(name: str, ok: bool, detail: object) -> CheckResult:
        return CheckResult(name, ok, str(detail))

    views = _views(observation)
    leaks = sorted(view for view, text in views.items() if any(h in text for h in hidden))
    families_open = [f for f, how in facts.families.items() if how == "ok"]
    writable_ro = [d for d, how in facts.writes.items() if how == "ok"]
    runtime_missing = {m: v for m, v in facts.runtime.items() if v.startswith("not importable")}

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
        check(
            "no host path in /proc",
            bool(views) and not leaks,
            f"{len(leaks)} views name one, e.g. {leaks[:3]}"
            if leaks
            else f"{len(views)} views clean",
        ),
        check(
            "seccomp: socket families",
            sorted(families_open) == sorted(_ALLOWED_FAMILIES),
            f"open: {sorted(families_open)}",
        ),
        check(
            "seccomp: vsock refused", "AF_VSOCK" not in families_open, facts.families["AF_VSOCK"]
        ),
        check("route netlink works", "'lo')" in facts.interface_names, facts.interface_names),
        check(
            "root and /dev read-only",
            not writable_ro,
            f"writable: {writable_ro}" if writable_ro else "all refused",
        ),
        check(
            "writable space capped",
            0 < facts.writable_bytes <= _LIMITS.workspace_bytes,
            f"{facts.writable_bytes} bytes of {_LIMITS.workspace_bytes}",
        ),
        check("agents' runtime imports", not runtime_missing, runtime_missing or facts.runtime),
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


# The eBPF observer, which detonation uses when it is chosen: a detonation that asks for it
# where it cannot run raises `InfrastructureError` (the validator abstains on the
# behavioural tracks). Checked by `assay sandbox check`, not before every round
# (bpftrace's start costs seconds of wall time, once per backend).
EBPF_CHECK = "ebpf observer (behavioural tracks)"


def _ebpf_observes(backend: SandboxBackend) -> list[CheckResult]:
    """A relative rename after chdir, seen by the eBPF observer at its resolved paths."""
    request = SealedRequest(
        argv=("/bin/sh", "-c", "mkdir -p /tmp/d && cd /tmp/d && : > a && mv a ../b"),
        limits=_LIMITS,
        observer=ObserverKind.EBPF,
    )
    trace = backend.run(request).trace
    seen = ("/tmp/d/a", "/tmp/b") in trace.renames
    detail = "rename seen at /tmp/d/a -> /tmp/b" if seen else f"renames seen: {trace.renames}"
    return [CheckResult(EBPF_CHECK, seen, detail)]


# Detonation's network (`SealedRequest.network_sink`): a connection to an address and a
# name resolved, each seen by the sink outside the sandbox.
NETWORK_CHECK = "network sink (behavioural tracks)"
_SINK_PEER = ("192.0.2.1", 9)
_SINK_NAME = "sink-check.example"


def _network_sink_observes(backend: SandboxBackend) -> list[CheckResult]:
    address, port = _SINK_PEER
    script = f"getent hosts {_SINK_NAME}; exec 3<>/dev/tcp/{address}/{port}; printf x >&3"
    request = SealedRequest(argv=("/bin/bash", "-c", script), limits=_LIMITS, network_sink=True)
    network = backend.run(request).network
    flows = [(f.address, f.port, f.data) for f in network.flows]
    names = [q.name for q in network.queries]
    seen = (address, port, b"x") in flows and _SINK_NAME in names
    return [CheckResult(NETWORK_CHECK, seen, f"flows: {flows[:4]}, names: {names[:4]}")]


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


def run_checks(backend: SandboxBackend, *, ebpf: bool = False) -> tuple[CheckResult, ...]:
    results = _tools()
    if not all(r.ok for r in results):
        return tuple(results)
    started = time.monotonic()
    results += _guarded("sandbox runs", lambda: _judge(*_inspect(backend)))
    results += _guarded("limits enforced", lambda: _limits_enforced(backend))
    results += _guarded(NETWORK_CHECK, lambda: _network_sink_observes(backend))
    if ebpf:
        results += _guarded(EBPF_CHECK, lambda: _ebpf_observes(backend))
    results.append(CheckResult("check duration", True, f"{time.monotonic() - started:.2f} s"))
    return tuple(results)


# A backend that passed the checks is held sound for this long: soundness is the host's
# (its kernel, cgroups and tools), which does not change between one round and the next
# minutes later, and a check costs 0.7 CPU-s (six sandboxes, three of them breaching a
# limit). A failure is never kept, and a validator whose rounds are hours apart checks
# before each.
SOUND_FOR_S = 300.0
_passed: weakref.WeakKeyDictionary[SandboxBackend, tuple[float, tuple[CheckResult, ...]]] = (
    weakref.WeakKeyDictionary()
)


def require_sound(backend: SandboxBackend) -> tuple[CheckResult, ...]:
    """The checks' results, run unless `backend` passed them in the last SOUND_FOR_S;
    raise `InfrastructureError` naming every failure (rounds abstain)."""
    held = _passed.get(backend)
    if held is not None and time.monotonic() - held[0] < SOUND_FOR_S:
        return held[1]
    results = backend.check()
    failed = [r for r in results if not r.ok]
    if failed:
        reasons = "; ".join(f"{r.name}: {r.detail}" for r in failed)
        raise InfrastructureError(f"sandbox unsound: {reasons}")
    _passed[backend] = (time.monotonic(), results)
    return results
