"""Hostile agents against the sandbox's edges: /proc views, socket families, tmpfs caps.

Each agent reports what it managed in an extra report key (kept, never scored),
and the test judges that from outside.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.mechanism.spec import MechanismSpec
from assay.records.outcome import RunOutcome, RunStatus
from assay.sandbox.bwrap import BwrapBackend

pytestmark = pytest.mark.sandbox
Run = Callable[..., RunOutcome]
# A corpus-like task name, used both as the task id and as the artifact's host directory.
TASK_NAME = "skills-malicious-exfil-keyed-0042"
LOCK = Path(__file__).parents[2] / "scripts" / "agent-runtime.txt"


def found(outcome: RunOutcome) -> dict[str, object]:
    """What the agent put under the report's "found" key."""
    assert outcome.status is RunStatus.COMPLETED, (outcome.detail, outcome.stderr_tail)
    assert outcome.report is not None and outcome.report.model_extra is not None
    seen = outcome.report.model_extra["found"]
    assert isinstance(seen, dict)
    return seen


def test_no_proc_view_names_the_task_or_a_host_path(
    run_agent: Run, backend: BwrapBackend, tmp_path: Path
) -> None:
    artifact = tmp_path / TASK_NAME
    artifact.mkdir()
    (artifact / "SKILL.md").write_text("# a skill\n")
    outcome = run_agent(
        """
        import glob

        def text(path):
            try:
                if os.path.islink(path) or path.endswith(("/cwd", "/root", "/exe")):
                    return os.readlink(path)
                with open(path, "rb") as f:
                    return f.read().decode(errors="replace")
            except OSError as exc:
                return str(exc)

        def agent_main(context):
            thread_probe(context)
            views = {}
            for proc in ["/proc/self", "/proc/thread-self", *glob.glob("/proc/[0-9]*")]:
                for name in ("mountinfo", "mounts", "mountstats", "cmdline", "environ",
                             "cgroup", "cwd", "root", "exe", "maps"):
                    views[f"{proc}/{name}"] = text(f"{proc}/{name}")
                for fd in glob.glob(f"{proc}/fd/*") + glob.glob(f"{proc}/map_files/*"):
                    views[fd] = text(fd)
            views["environment"] = repr(dict(os.environ))
            views["context"] = repr(context)
            return report(found=views)
        """,
        task_id=TASK_NAME,
        artifact_dir=artifact,
    )
    views = found(outcome)
    # The agent read real views: the mount table names the artifact's place inside.
    mountinfo = views["/proc/self/mountinfo"]
    assert isinstance(mountinfo, str) and "/task/artifact" in mountinfo
    assert len(views) > 30
    hidden = [TASK_NAME, str(tmp_path), os.getcwd(), *backend.private_paths]
    leaks = {view: h for view, text in views.items() for h in hidden if h in str(text)}
    assert leaks == {}
    # bubblewrap (pid 1 inside) shows no options and inherited nothing of the validator.
    cmdline = str(views["/proc/1/cmdline"])
    assert cmdline.startswith("bwrap\0--args\0") and "--bind" not in cmdline
    environ = str(views["/proc/1/environ"]).split("\0")
    assert sorted(e.split("=")[0] for e in environ if e) == ["PATH", "PWD"]
    assert "PWD=/" in environ


def test_vsock_and_unneeded_socket_families_are_refused(run_agent: Run) -> None:
    port = 47_000 + os.getpid() % 1000
    outcome = run_agent(
        f"""
        import ctypes, errno

        def attempt(call):
            try:
                call()
                return "ok"
            except OSError as exc:
                return errno.errorcode.get(exc.errno, str(exc.errno))

        def vsock_listen():
            s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
            s.bind((socket.VMADDR_CID_ANY, {port}))
            s.listen()

        def raw_socket(family, kind, proto):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            fd = libc.syscall(41, ctypes.c_long(family), kind, proto)  # socket(2) on x86-64
            if fd < 0:
                raise OSError(ctypes.get_errno(), "socket")
            os.close(fd)

        def agent_main(context):
            thread_probe(context)
            return report(found={{
                "vsock": attempt(vsock_listen),
                # AF_VSOCK with high bits set: the kernel reads only the low 32.
                "vsock_high_bits": attempt(lambda: raw_socket((1 << 32) | 40, 1, 0)),
                "alg": attempt(lambda: socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET)),
                "packet": attempt(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM)),
                "netlink_audit": attempt(lambda: socket.socket(socket.AF_NETLINK,
                                                               socket.SOCK_RAW, 9)),
                "socketpair_inet": attempt(lambda: raw_socketpair()),
                # What stays: local sockets, loopback IP and route netlink.
                "unix_pair": attempt(socket.socketpair),
                "inet6": attempt(lambda: socket.socket(socket.AF_INET6).bind(("::1", 0))),
                "interfaces": attempt(socket.if_nameindex),
                "addrconfig": attempt(lambda: socket.getaddrinfo(
                    "localhost", 80, flags=socket.AI_ADDRCONFIG)),
            }})

        def raw_socketpair():
            libc = ctypes.CDLL(None, use_errno=True)
            pair = (ctypes.c_int * 2)()
            if libc.socketpair(socket.AF_INET, socket.SOCK_STREAM, 0, pair) != 0:
                raise OSError(ctypes.get_errno(), "socketpair")
        """
    )
    assert found(outcome) == {
        "vsock": "EAFNOSUPPORT",
        "vsock_high_bits": "EAFNOSUPPORT",
        "alg": "EAFNOSUPPORT",
        "packet": "EAFNOSUPPORT",
        "netlink_audit": "EPROTONOSUPPORT",
        "socketpair_inet": "EAFNOSUPPORT",
        "unix_pair": "ok",
        "inet6": "ok",
        "interfaces": "ok",
        "addrconfig": "ok",
    }
    # On a host with vsock, the host itself can still listen on that port.
    try:
        host = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    except OSError as exc:
        assert exc.errno == errno.EAFNOSUPPORT
        return
    with host:
        host.bind((socket.VMADDR_CID_ANY, port))
        host.listen()


def test_filling_every_writable_place_stops_at_the_workspace_cap(
    run_agent: Run, spec: MechanismSpec
) -> None:
    outcome = run_agent(
        """
        import errno

        def fill(directory):
            chunk = b"x" * (1 << 20)
            written = 0
            try:
                with open(os.path.join(directory, "fill"), "wb") as f:
                    while True:
                        written += f.write(chunk)
                        f.flush()
            except OSError as exc:
                return [written, errno.errorcode.get(exc.errno)]

        def agent_main(context):
            thread_probe(context)
            places = ["/dev/shm", "/", "/dev", "/tmp", "/task/workspace", "/task", "/etc",
                      "/task/artifact", "/task/input", "/usr/local"]
            return report(found={place: fill(place) for place in places})
        """
    )
    filled = found(outcome)
    cap = spec.sandbox.workspace_bytes
    written = {place: result for place, result in filled.items() if result != [0, "EROFS"]}
    # Only the three names of the one capped tmpfs took bytes, and together no more
    # than the cap: /dev/shm, written first, took nearly all of it.
    assert set(written) == {"/dev/shm", "/tmp", "/task/workspace"}, filled
    total = sum(int(result[0]) for result in written.values())  # type: ignore[index]
    assert cap - (1 << 20) <= total <= cap
    assert all(result[1] == "ENOSPC" for result in written.values())  # type: ignore[index]


def test_an_agent_importing_httpx_completes(run_agent: Run) -> None:
    outcome = run_agent(
        """
        import http.server, socketserver, threading
        import httpx

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = f"served {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        def agent_main(context):
            thread_probe(context)
            server = socketserver.UnixStreamServer("/tmp/api.sock", Handler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            transport = httpx.HTTPTransport(uds="/tmp/api.sock")
            with httpx.Client(transport=transport) as client:
                answer = client.get("http://sandbox/probe")
            server.shutdown()
            return report(found={"version": httpx.__version__, "status": answer.status_code,
                                 "text": answer.text})
        """
    )
    seen = found(outcome)
    assert seen["status"] == 200 and seen["text"] == "served /probe"
    assert f"httpx=={seen['version']} " in LOCK.read_text()
