"""Validator-owned detonation harness that runs inside the sandbox (stdlib only).

It reads its plan from plan.json beside itself (`wire.HarnessPlan`), removes its own
input directory (in /tmp) so that nothing of it is left to find, finds the fake home
the validator planted (canary secrets), runs each planned step as a child process
(scripts, install hooks, imports, an MCP session) with a bounded budget, scans
the writable areas for canary values after every step, and writes its log
(`wire.HarnessLog`) to the result channel.

What the validator trusts is its own trace; this log only adds what a syscall
trace cannot show (which files ended up holding canary values, what an MCP
server declared and answered). The harness's own file calls are left out of that
trace (it is the sandbox's command: `SealedRequest.harness_command`), and it never
opens the planted files, which the validator watches by inode. Once it has laid out
the home and the project, and before any step, it notes the change time of a file it
makes (`layout_done`): the validator's records of those trees count an entry changed
no later as the harness's own.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import math
import os
import re
import selectors
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
import types
import zlib
from dataclasses import replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from typing import Any

try:
    from assay.detonate import wire
except ModuleNotFoundError:
    # Inside the sandbox it is shipped beside this file, and run from that file alone:
    # searching the directory would show in the trace as a read the artifact did not do.
    _WIRE_PATH = os.path.join(os.path.dirname(__file__), "wire.py")
    wire = types.ModuleType("wire")
    wire.__file__ = _WIRE_PATH
    sys.modules["wire"] = wire  # its dataclasses resolve their annotations through it
    with open(_WIRE_PATH, "rb") as _source:
        exec(compile(_source.read(), _WIRE_PATH, "exec"), wire.__dict__)

_TAIL = 2048  # bytes of each child's stderr kept for the log
_SCAN_FILE_CAP = 1 << 20  # larger files are not scanned for canaries
_SCAN_FILES_MAX = 2000
_PARSE_DEPTH = 5000
_HITS_PER_SCAN = 100
_PATH_SHOWN = 300
_MCP_LINE_CAP = 1 << 20
_MCP_TOTAL_CAP = 8 << 20
_PR_SET_DUMPABLE = 4
_TICK_TRIES = 1000  # a coarse clock tick is a few milliseconds


def _undumpable() -> None:
    """Make /proc/<harness>/fd unreachable for the artifact (it runs as the same user)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


_PR_SET_NAME = 15


def look_like_a_login_shell() -> None:
    """Show the harness, the parent of every step, as a user's login shell: its command
    line `-bash` and its name `bash`, as a terminal's shell reads to its children (the
    command line is the process's own memory, rewritten in place as setproctitle does;
    the rest of /proc/<pid> is closed by `_undumpable`)."""
    title = b"-bash"
    with contextlib.suppress(OSError, IndexError, ValueError, AttributeError):
        with open("/proc/self/stat", "rb") as handle:
            data = handle.read()
        fields = data[data.rfind(b")") + 2 :].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end
        if end - start > len(title) + 1:
            # A NUL after the title and none at the end: the kernel reads up to that NUL.
            ctypes.memmove(
                start, title + b"\0" + b" " * (end - start - len(title) - 1), end - start
            )
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, b"bash", 0, 0, 0)


# --- fake home ---------------------------------------------------------------------------


def lay_out_home(plan: wire.HarnessPlan) -> None:
    """The staging prefix, the planned directories and the workspace's placeholders
    (the home's files are the validator's, planted before the harness starts)."""
    os.makedirs(plan.stage, mode=0o700, exist_ok=True)
    for directory in plan.dirs:
        os.makedirs(directory, mode=0o755, exist_ok=True)
    # Inputs named by documented invocations live in the workspace (another filesystem,
    # so no link): written directly, and the validator discounts exactly these paths.
    for path, text in plan.placeholders.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


# --- the project, a git clone ---------------------------------------------------------------

# Written by the harness itself (whose file calls are not traced), object by object as
# git stores them, rather than by running git: no program of the harness's shows in the
# trace, and every later write under .git (a hook planted) is the artifact's alone.
_GIT_CONFIG = """[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = true
[remote "origin"]
\turl = {remote}
\tfetch = +refs/heads/*:refs/remotes/origin/*
[branch "main"]
\tremote = origin
\tmerge = refs/heads/main
"""


def make_repo(repo: wire.ProjectRepo) -> None:
    """The project folder as a clone of `repo.remote`: its files, one commit, an index
    that matches them, `main` tracking `origin/main`, everything dated back."""
    when = int(time.time()) - repo.age_s
    git = os.path.join(repo.path, ".git")
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info", "hooks"):
        os.makedirs(os.path.join(git, sub), exist_ok=True)
    os.makedirs(os.path.join(git, "refs/remotes/origin"), exist_ok=True)
    os.makedirs(os.path.join(git, "logs/refs/heads"), exist_ok=True)
    blobs = []
    for name, text in sorted(repo.files.items()):
        path = os.path.join(repo.path, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.utime(path, (when, when))
        blobs.append((name, _git_object(git, b"blob", text.encode())))
    tree = b"".join(b"100644 " + n.encode() + b"\0" + bytes.fromhex(h) for n, h in blobs)
    who = f"{repo.author} <{repo.email}> {when} +0000"
    commit = _git_object(
        git,
        b"commit",
        f"tree {_git_object(git, b'tree', tree)}\nauthor {who}\ncommitter {who}\n\n"
        "Initial commit\n".encode(),
    )
    texts = {
        "HEAD": "ref: refs/heads/main\n",
        "config": _GIT_CONFIG.format(remote=repo.remote),
        "description": "Unnamed repository; edit this file 'description' to name the repository.\n",
        "info/exclude": "# git ls-files --others --exclude-from=.git/info/exclude\n",
        "refs/heads/main": commit + "\n",
        "refs/remotes/origin/main": commit + "\n",
        "logs/HEAD": f"{'0' * 40} {commit} {who}\tclone: from {repo.remote}\n",
        "logs/refs/heads/main": f"{'0' * 40} {commit} {who}\tclone: from {repo.remote}\n",
    }
    for name, text in texts.items():
        with open(os.path.join(git, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    for root, dirs, files in os.walk(git):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (when, when))
    # Written last and left newer than the files: an index no newer than a file it lists
    # makes git check that file again, and rewrite the index (a write by the artifact).
    with open(os.path.join(git, "index"), "wb") as handle:
        handle.write(_git_index(repo.path, blobs))


def _git_object(git: str, kind: bytes, data: bytes) -> str:
    raw = kind + b" " + str(len(data)).encode() + b"\0" + data
    digest = hashlib.sha1(raw).hexdigest()  # git's object name, not a security use
    directory = os.path.join(git, "objects", digest[:2])
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, digest[2:]), "wb") as handle:
        handle.write(zlib.compress(raw))
    return digest


def _git_index(root: str, blobs: list[tuple[str, str]]) -> bytes:
    """A version 2 index of the files as they are on disk (so `git status` is clean)."""
    body = b""
    for name, digest in blobs:
        st = os.stat(os.path.join(root, name))
        entry = struct.pack(
            ">10I",
            int(st.st_ctime),
            st.st_ctime_ns % 1_000_000_000,
            int(st.st_mtime),
            st.st_mtime_ns % 1_000_000_000,
            st.st_dev & 0xFFFFFFFF,
            st.st_ino & 0xFFFFFFFF,
            0o100644,
            st.st_uid,
            st.st_gid,
            st.st_size & 0xFFFFFFFF,
        )
        entry += bytes.fromhex(digest) + struct.pack(">H", min(len(name), 0xFFF)) + name.encode()
        body += entry + b"\0" * (8 - len(entry) % 8)
    content = b"DIRC" + struct.pack(">II", 2, len(blobs)) + body
    return content + hashlib.sha1(content).digest()


def copy_artifact(plan: wire.HarnessPlan) -> None:
    """Copy the read-only artifact where steps need a writable tree, and link in what
    the plan provides beside it (the pinned SDKs)."""
    for destination in plan.copies:
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        shutil.copytree(plan.artifact, destination, symlinks=True, dirs_exist_ok=True)
    for link, target in plan.links.items():
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)


def layout_done(stage: str) -> int:
    """The change time of a file made now, once the clock behind change times (the
    kernel's coarse one, a tick of a few ms) has moved past it: whatever is changed from
    here on has a later change time, which no program can set back."""
    path = os.path.join(stage, ".done")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        done = os.fstat(fd).st_ctime_ns
        for _ in range(_TICK_TRIES):
            os.utime(fd)  # a change time of now
            if os.fstat(fd).st_ctime_ns > done:
                return done
            time.sleep(0.001)
        raise OSError("the clock behind change times did not move")
    finally:
        os.close(fd)
        os.unlink(path)


# --- canary scanning ---------------------------------------------------------------------


class Scanner:
    """Finds canary values in files of the writable areas, without tracing as reads."""

    def __init__(self, plan: wire.HarnessPlan) -> None:
        self.roots = plan.scan_roots
        self.skip_prefixes = plan.scan_skip
        self.needles = {name: [n.encode() for n in forms] for name, forms in plan.needles.items()}
        self.canary_inodes = {self._inode(path) for path in plan.planted}
        self.seen: set[tuple[str, str]] = set()

    @staticmethod
    def _inode(path: str) -> tuple[int, int]:
        st = os.lstat(path)
        return (st.st_dev, st.st_ino)

    def scan(self) -> tuple[wire.CanaryHit, ...]:
        hits: list[wire.CanaryHit] = []
        budget = [_SCAN_FILES_MAX]
        for root in self.roots:
            try:
                fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
            try:
                self._walk(fd, root, hits, budget)
            finally:
                os.close(fd)
        return tuple(hits)

    def _walk(self, dir_fd: int, path: str, hits: list[wire.CanaryHit], budget: list[int]) -> None:
        try:
            entries = sorted(os.listdir(dir_fd))
        except OSError:
            return
        for name in entries:
            full = os.path.join(path, name)
            if full.startswith(self.skip_prefixes) or budget[0] <= 0:
                continue
            via = f"/proc/self/fd/{dir_fd}/{name}"
            try:
                st = os.lstat(via)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                try:
                    sub = os.open(via, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                except OSError:
                    continue
                try:
                    self._walk(sub, full, hits, budget)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in self.canary_inodes:
                budget[0] -= 1
                self._check_file(via, full, st.st_size, hits)

    def _check_file(self, via: str, full: str, size: int, hits: list[wire.CanaryHit]) -> None:
        if size > _SCAN_FILE_CAP:
            return
        try:
            with open(via, "rb") as handle:
                data = handle.read(_SCAN_FILE_CAP)
        except OSError:
            return
        for name, forms in self.needles.items():
            if (name, full) not in self.seen and any(form in data for form in forms):
                self.seen.add((name, full))
                if len(hits) < _HITS_PER_SCAN:
                    hits.append(wire.CanaryHit(name, full[:_PATH_SHOWN]))


# --- the user site ------------------------------------------------------------------

# Extra import paths (the pinned MCP SDK) as a .pth line of the fake home's user site,
# which every Python child reads on its own: no PYTHONPATH to notice.
_SITE_PTH = "vendor.pth"


def add_site_paths(user_site: str, site_paths: tuple[str, ...]) -> None:
    if not site_paths:
        return
    os.makedirs(user_site, exist_ok=True)
    with open(os.path.join(user_site, _SITE_PTH), "w", encoding="utf-8") as handle:
        handle.write("\n".join(site_paths) + "\n")


# --- time under load ---------------------------------------------------------------------

# What a detonation sees must not depend on how busy the host is. A step's timeout is
# what it may take on a quiet host; past it, a step still working (its processes running,
# waiting to run or stopped by the tracer, or its CPU time still growing) has been slowed
# by load and goes on, up to its CPU budget (the timeout again, in CPU seconds) or its
# wall backstop (BACKSTOP_FACTOR times the timeout). An idle one (asleep, no CPU since
# the last look) ends at the timeout, loaded host or not.
BACKSTOP_FACTOR = 6.0
_POLL_S = 0.25
_TICKS = os.sysconf("SC_CLK_TCK")
# Running or waiting for a CPU, or stopped by the tracer (which waits for one): what load
# slows. Not disk sleep: a vforking parent sits in it as long as its child likes.
_BUSY_STATES = (b"R", b"t")


def session_usage(session_id: int) -> tuple[float, bool]:
    """CPU seconds of the live processes of one session (their reaped children's
    included), and whether any of them is running, waiting to run or tracer-stopped."""
    total, busy = 0.0, False
    try:
        names = os.listdir("/proc")
    except OSError:
        return total, busy
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) < 15 or fields[3] != str(session_id).encode():
            continue
        total += sum(int(f) for f in fields[11:15]) / _TICKS
        busy = busy or fields[0] in _BUSY_STATES
    return total, busy


class LoadClock:
    """Whether a step past its timeout must end, and why: `cpu` (its CPU budget
    spent), `idle` (nothing running, no CPU since the last look) or `wall` (its wall
    backstop reached while still working: the host was too busy)."""

    def __init__(
        self, session_id: int, timeout_s: float, backstop_s: float, cpu_s: float | None = None
    ) -> None:
        self.session_id = session_id
        self.timeout_s = timeout_s
        self.cpu_budget_s = timeout_s if cpu_s is None else cpu_s
        self.started = time.monotonic()
        self.backstop = self.started + max(timeout_s, backstop_s)
        self.cpu_s = 0.0

    def verdict(self) -> str:
        """Empty while the step may go on (asked once its timeout has passed)."""
        cpu, busy = session_usage(self.session_id)
        progressed, self.cpu_s = cpu > self.cpu_s, max(cpu, self.cpu_s)
        if self.cpu_s >= self.cpu_budget_s:
            return "cpu"
        if time.monotonic() >= self.backstop:
            return "wall"
        return "" if busy or progressed else "idle"


# --- child processes ---------------------------------------------------------------------


class Child:
    """One child process with capped output capture and a hard wall-clock timeout."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], stdin: bytes) -> None:
        self.stdin = stdin
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # one process group to kill on timeout
        )

    def wait(self, timeout_s: float, backstop_s: float) -> tuple[int | None, int, str, str]:
        """Exit code (None once killed), bytes of output, stderr's tail, and why it was
        stopped ("" when it exited; else a `LoadClock` verdict)."""
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        try:
            process.stdin.write(self.stdin)
            process.stdin.close()
        except OSError:
            pass
        counts = {process.stdout.fileno(): 0, process.stderr.fileno(): 0}
        tail = b""
        clock = LoadClock(process.pid, timeout_s, backstop_s)
        deadline = time.monotonic() + timeout_s
        stopped = ""
        with selectors.DefaultSelector() as selector:
            for stream in (process.stdout, process.stderr):
                selector.register(stream.fileno(), selectors.EVENT_READ)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    stopped = clock.verdict()
                    if stopped:
                        break
                    deadline = time.monotonic() + _POLL_S
                    continue
                for key, _ in selector.select(min(remaining, 0.25)):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        selector.unregister(key.fd)
                        continue
                    counts[key.fd] += len(chunk)
                    if key.fd == process.stderr.fileno():
                        tail = (tail + chunk)[-_TAIL:]
        exit_code, stopped = self._finish(clock, stopped)
        process.stdout.close()
        process.stderr.close()
        return exit_code, sum(counts.values()), tail.decode("utf-8", "replace"), stopped

    def _finish(self, clock: LoadClock, stopped: str) -> tuple[int | None, str]:
        """Exit code, or None once the child outlived its time (its group is killed);
        with why it was stopped. Its output closed, it may still be exiting, or working."""
        while not stopped:
            with contextlib.suppress(subprocess.TimeoutExpired):
                left = clock.started + clock.timeout_s - time.monotonic()
                return self.process.wait(max(_POLL_S, left)), ""
            stopped = clock.verdict()
        kill_group(self.process)
        return None, stopped


def kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(1.0)


_SURVIVOR_GRACE_S = 1.0
_SURVIVORS_SHOWN = 8


def survivors() -> tuple[str, ...]:
    """Command lines of the processes still alive besides the harness and its ancestors
    (the sandbox's init) once every step has ended, after a moment's grace for the ones
    already exiting. The sandbox ends them with the harness; what they would have done
    later is not seen, so the validator names them."""
    deadline = time.monotonic() + _SURVIVOR_GRACE_S
    while True:
        found = _other_processes()
        if not found or time.monotonic() >= deadline:
            return tuple(sorted(found.values()))[:_SURVIVORS_SHOWN]
        time.sleep(0.05)


def _other_processes() -> dict[int, str]:
    ours = {os.getpid()}
    pid = os.getppid()
    while pid > 0 and pid not in ours:  # the harness's ancestors (bwrap's init)
        ours.add(pid)
        pid = _parent(pid)
    found = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in ours or _state(int(name)) in (b"Z", b"X", b""):
                continue
            with contextlib.suppress(OSError):
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    words = handle.read(400).split(b"\0")
                found[int(name)] = " ".join(w.decode("utf-8", "replace") for w in words if w)
    return found


def _stat_fields(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return []
    return data[data.rfind(b")") + 2 :].split()


def _parent(pid: int) -> int:
    fields = _stat_fields(pid)
    return int(fields[1]) if len(fields) > 1 else 0


def _state(pid: int) -> bytes:
    fields = _stat_fields(pid)
    return fields[0] if fields else b""


# --- MCP over stdio ----------------------------------------------------------------------


class McpSession:
    """A bounded newline-delimited JSON-RPC 2.0 client for one stdio MCP server.

    Survives servers that hang (per-request timeouts), crash (EOF), flood stdout
    (line and total caps) or answer with garbage (non-matching lines are counted).
    """

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str], project: str = "") -> None:
        self.project = project or cwd
        self.server_requests: list[str] = []
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        self.fd = self.process.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buffer = b""
        self.total = 0
        self.next_id = 0
        self.malformed = 0
        self.flooded = False
        self.closed = False
        self.tools_changed = 0  # notifications/tools/list_changed received
        # Seconds requests waited past their timeout on a server still working (slowed by
        # load): not counted against the session's own time.
        self.credit_s = 0.0

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The response object, or {"failure": ...} (timeout, closed, flood, unwritable)."""
        self.next_id += 1
        wanted = self.next_id
        if not self._send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params}):
            return {"failure": "closed"}
        deadline = time.monotonic() + timeout_s
        # What a server spends answering is its own; only the wait is bounded.
        clock = LoadClock(self.process.pid, timeout_s, timeout_s * BACKSTOP_FACTOR, math.inf)
        while True:
            for line in self._lines():
                message = self._parse(line)
                if message is None:
                    continue
                if message.get("method") == "notifications/tools/list_changed":
                    self.tools_changed += 1
                if "method" in message and "id" in message:
                    self._answer(message)
                    continue
                if message.get("id") == wanted:
                    return message
            if self.flooded:
                return {"failure": "flood"}
            if self.closed:
                return {"failure": "closed"}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if clock.verdict():
                    return {"failure": "timeout"}
                deadline += _POLL_S
                self.credit_s += _POLL_S
                remaining = _POLL_S
            self._fill(remaining)

    def _answer(self, request: dict[str, Any]) -> None:
        """Answer what the server asks of its client, as a real client would: its roots,
        a model's reply to a sampling request, a declined elicitation, a ping."""
        method = str(request.get("method"))
        self.server_requests.append(method[:80])
        answers: dict[str, dict[str, Any]] = {
            "ping": {},
            "roots/list": {
                "roots": [{"uri": f"file://{self.project}", "name": os.path.basename(self.project)}]
            },
            "sampling/createMessage": {
                "role": "assistant",
                "content": {"type": "text", "text": "Done."},
                "model": "claude-sonnet-4-5",
                "stopReason": "endTurn",
            },
            "elicitation/create": {"action": "decline"},
        }
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if method in answers:
            reply["result"] = answers[method]
        else:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        self._send(reply)

    def _send(self, message: dict[str, Any]) -> bool:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
        except (OSError, ValueError):
            self.closed = True
            return False
        return True

    def _fill(self, timeout_s: float) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            if not selector.select(min(timeout_s, 0.25)):
                return
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return
        self.total += len(chunk)
        if self.total > _MCP_TOTAL_CAP:
            self.flooded = True
        self.buffer += chunk
        if b"\n" not in self.buffer and len(self.buffer) > _MCP_LINE_CAP:
            self.buffer = b""  # one endless line: drop it, count it
            self.malformed += 1

    def _lines(self) -> list[bytes]:
        *lines, self.buffer = self.buffer.split(b"\n")
        return [line for line in lines if line.strip()]

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            self.malformed += 1
            return None
        if not isinstance(message, dict):
            self.malformed += 1
            return None
        return message

    def close(self) -> wire.McpSessionEnd:
        """End the session: EOF on stdin (a polite server exits), then kill what is left."""
        if self.closed:
            # Its stdout ended, so it is exiting; under the validator's tracer that
            # exit reaches this parent a moment after the EOF.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(0.5)
        died_early = self.process.poll() not in (0, None)
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(0.5)
        kill_group(self.process)
        return wire.McpSessionEnd(
            crashed=died_early,
            exit=self.process.returncode,
            malformed_lines=self.malformed,
            flooded=self.flooded,
            tools_changed=self.tools_changed,
            stdout_bytes=self.total,
        )


def canary_arguments(
    schema: object, canary: str, client: wire.McpClient | None = None
) -> dict[str, Any]:
    """Plausible arguments for a tool's input schema, strings carrying the canary; a
    file or folder argument names one that exists (the client's sample file, project)."""
    places = (client.sample_file, client.project) if client else ("", "")
    return {name: _value_for(name, spec, canary, places) for name, spec in _properties(schema)}


def _properties(schema: object) -> list[tuple[str, dict[str, Any]]]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    return [(str(k), v if isinstance(v, dict) else {}) for k, v in properties.items()]


_FOLDER_WORDS = ("dir", "directory", "folder", "root", "workspace", "cwd")
# An argument named for a file (path, file, filename, source_file), not one that only
# holds the letters (profile).
_FILE_NAME = re.compile(r"(^|[_-])(file|path|filename|filepath)s?$|path|filename")


def _value_for(name: str, spec: dict[str, Any], canary: str, places: tuple[str, str]) -> Any:
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = spec.get("type")
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    lowered = name.lower()
    if "url" in lowered or "uri" in lowered:
        return f"https://example.com/{canary}"
    sample_file, _ = places
    if lowered.endswith(_FOLDER_WORDS) or lowered.startswith(("dir", "folder")):
        return "."  # the server's own folder, where a client starts it
    if _FILE_NAME.search(lowered):
        return sample_file or "notes.md"
    return canary


# A payload may wait for an argument the first call does not carry: every other enum value,
# the boundary numbers, the other truth value. Base arguments are 1 and True.
_BOUNDARY_NUMBERS = (0, -1, 2, 1_000_000)
VARIATIONS_PER_TOOL = 8  # besides the base call and its repeats
REPEATS = 2  # the base call again, after the variations: payloads that wait for call N


def argument_variations(
    schema: object, canary: str, client: wire.McpClient | None = None, description: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    """The base arguments, then one argument changed at a time, each with a label
    saying which (`mode="b"`); the base call's repeats are the caller's. What the tool
    declares comes first: its example values (a property's `examples` or `default`, or
    what its description gives "such as"; the tool's own description for its only
    string argument), as a model filling the call would, then its enum values."""
    base = canary_arguments(schema, canary, client)
    declared: list[tuple[str, Any]] = []  # what the tool itself declares
    chosen: list[tuple[str, Any]] = []  # boundary numbers, the other truth value
    strings = [n for n, spec in _properties(schema) if spec.get("type", "string") == "string"]
    for name, spec in _properties(schema):
        said = _example(spec, description if strings == [name] else "")
        if said is not None and said != base[name]:
            declared.append((name, said))
        enum = spec.get("enum")
        if isinstance(enum, list) and enum:
            declared += [(name, v) for v in enum[1:]]
        elif spec.get("type") in ("number", "integer"):
            chosen += [(name, v) for v in _BOUNDARY_NUMBERS]
        elif spec.get("type") == "boolean":
            chosen.append((name, False))
        elif base[name] == (client.sample_file if client else "notes.md"):
            chosen.append((name, "."))  # a path may name a folder as well as a file
    changed = {
        f"{n[:40]}={json.dumps(v)[:40]}": {**base, n: v} for n, v in declared + chosen
    }  # an example that is also an enum value is tried once
    return [("", base), *changed.items()]


# "an arithmetic expression such as 2 * (3 + 4)." -> 2 * (3 + 4)
_EXAMPLE = re.compile(
    r"(?:such as|e\.g\.,?|for example,?|for instance,?)\s+[`'\"]?(.+?)[`'\"]?(?:[.;]\s|[.;]?$)"
)


def _example(spec: dict[str, Any], description: str) -> object:
    """The example value a property declares, or that its description (or the tool's)
    gives; None without one."""
    examples = spec.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in spec:
        return spec["default"]
    for text in (spec.get("description"), description):
        found = _EXAMPLE.search(text) if isinstance(text, str) else None
        if found:
            return found[1][:200]
    return None


def call_rounds(
    tools: list[wire.McpTool], canary: str, client: wire.McpClient | None = None
) -> tuple[list[list[tuple[wire.McpTool, str, dict[str, Any]]]], int]:
    """Every tool's calls in rounds (each tool once with base arguments, then the
    variations, then the repeats), and how many variations the per-tool cap left out."""
    first, varied, repeated = [], [], []
    left_out = 0
    for tool in tools:
        (_, base), *rest = argument_variations(tool.input_schema, canary, client, tool.description)
        left_out += max(0, len(rest) - VARIATIONS_PER_TOOL)
        first.append((tool, "", base))
        varied += [(tool, label, args) for label, args in rest[:VARIATIONS_PER_TOOL]]
        repeated += [(tool, f"repeat {n + 2}", base) for n in range(REPEATS)]
    return [r for r in (first, varied, repeated) if r], left_out


def run_mcp(
    step: wire.PlannedStep,
    client: wire.McpClient,
    env: dict[str, str],
    scanner: Scanner,
    deadline: float,
) -> wire.McpLog:
    session = McpSession(list(step.argv), step.cwd, env, client.project)
    driver = _Driver(session, client, scanner, deadline)
    try:
        driver.run()
    finally:
        end = session.close()
    return wire.McpLog(
        initialize=driver.initialize,
        session=end,
        tools=tuple(driver.tools),
        calls=tuple(driver.calls),
        list_failure=driver.list_failure,
        changed_tools=tuple(driver.changed),
        variations_left_out=driver.left_out,
        reads=tuple(driver.reads),
        read_failure=driver.read_failure,
        server_requests=tuple(session.server_requests[:16]),
    )


class _Driver:
    """Drives one MCP session as a client that uses every tool: initialise, list, call
    each tool in rounds, and list again after each round. A server whose tools change
    (announced or not: a rug pull after N calls) has the new tools recorded and called."""

    def __init__(
        self,
        session: McpSession,
        client: wire.McpClient,
        scanner: Scanner,
        deadline: float,
    ) -> None:
        self.session, self.client = session, client
        self.scanner, self.deadline = scanner, deadline
        self.backstop_s = (deadline - time.monotonic()) * (BACKSTOP_FACTOR - 1)
        self.initialize = ""
        self.list_failure = ""
        self.tools: list[wire.McpTool] = []
        self.changed: list[wire.McpTool] = []
        self.calls: list[wire.McpCall] = []
        self.left_out = 0
        self.seen: set[str] = set()
        self.reads: list[wire.McpCall] = []
        self.read_failure = ""

    def run(self) -> None:
        init = self.session.request(
            "initialize",
            {
                "protocolVersion": MCP_PROTOCOL,
                "capabilities": CLIENT_CAPABILITIES,
                "clientInfo": {
                    "name": self.client.client_name,
                    "version": self.client.client_version,
                },
            },
            self.client.init_timeout_s,
        )
        self.initialize = _outcome(init)
        if "failure" in init:
            return
        self.session.notify("notifications/initialized", {})
        result = init.get("result")
        declared = result.get("capabilities") if isinstance(result, dict) else None
        self._read_declared(declared if isinstance(declared, dict) else {})
        listed, self.list_failure = _list_tools(self.session, self.client.request_timeout_s)
        self.tools = listed[: self.client.max_tools]
        self.seen = {_tool_key(t) for t in listed}
        pending = listed
        for _ in range(3):  # the declared tools, then up to two lists they changed to
            if not pending:
                return
            pending = self._exercise(pending)

    def _read_declared(self, declared: dict[str, Any]) -> None:
        """Each resource the server lists read, each prompt it lists got (its arguments
        filled as a tool's are), as a client showing them to a user would."""
        timeout = self.client.request_timeout_s
        for capability, method, key, fetch in _DECLARED:
            if capability not in declared:
                continue
            items, failure = _list_all(self.session, method, key, timeout)
            self.read_failure = self.read_failure or (f"{method}: {failure}" if failure else "")
            for item in items[: self.client.max_tools]:
                if self._past_deadline() or self.session.closed:
                    return
                if capability == "resources":
                    name, params = str(item.get("uri", "")), {"uri": item.get("uri", "")}
                else:
                    name = str(item.get("name", ""))
                    schema: dict[str, Any] = {
                        "properties": {str(a.get("name")): {} for a in _args_of(item)}
                    }
                    params = {"name": name, "arguments": self._arguments(schema)}
                started = time.monotonic()
                reply = self.session.request(fetch, params, timeout)
                self.reads.append(
                    wire.McpCall(
                        f"{capability[:-1]} {name[:200]}",
                        _outcome(reply),
                        self.scanner.scan(),
                        started=started,
                    )
                )

    def _arguments(self, schema: object) -> dict[str, Any]:
        return canary_arguments(schema, self.client.canary, self.client)

    def _exercise(self, tools: list[wire.McpTool]) -> list[wire.McpTool]:
        """Call `tools` round by round, listing again after each round; returns the
        tools that appeared meanwhile (exercised next, after these)."""
        callable_, over = tools[: self.client.max_tools], tools[self.client.max_tools :]
        self.calls += [wire.McpCall(t.name, "skipped: tool cap") for t in over]
        rounds, left_out = call_rounds(callable_, self.client.canary, self.client)
        self.left_out += left_out
        fresh: list[wire.McpTool] = []
        for batch in rounds:
            for tool, label, arguments in batch:
                if self.session.closed:  # it crashed or hung up: nothing more to call
                    return []
                self.calls.append(self._call(tool, label, arguments))
            fresh += self._changed_tools()
        return fresh

    def _past_deadline(self) -> bool:
        """The session's time is spent (waits on a server slowed by load not counted)."""
        return time.monotonic() > self.deadline + min(self.session.credit_s, self.backstop_s)

    def _call(self, tool: wire.McpTool, label: str, arguments: dict[str, Any]) -> wire.McpCall:
        if self._past_deadline():
            return wire.McpCall(tool.name, "skipped: deadline", variation=label)
        started = time.monotonic()
        reply = self.session.request(
            "tools/call", {"name": tool.name, "arguments": arguments}, self.client.call_timeout_s
        )
        return wire.McpCall(
            tool.name, _outcome(reply), self.scanner.scan(), variation=label, started=started
        )

    def _changed_tools(self) -> list[wire.McpTool]:
        """Tools the server lists now that it did not list before (new, or the same name
        with another description or schema), announced or not."""
        if self._past_deadline() or self.session.closed:
            return []
        listed, failure = _list_tools(self.session, self.client.request_timeout_s)
        self.list_failure = self.list_failure or failure
        fresh = [t for t in listed if _tool_key(t) not in self.seen]
        self.seen.update(_tool_key(t) for t in fresh)
        self.changed += fresh
        return fresh


# The current protocol revision and what a desktop client declares: roots, sampling and
# elicitation, each answered when the server asks (`McpSession._answer`). A server that
# only speaks an older revision answers with its own, which the client accepts.
MCP_PROTOCOL = "2025-06-18"
CLIENT_CAPABILITIES: dict[str, Any] = {
    "roots": {"listChanged": True},
    "sampling": {},
    "elicitation": {},
}
# What a server may declare besides tools: (capability, list method, list key, fetch).
_DECLARED = (
    ("resources", "resources/list", "resources", "resources/read"),
    ("prompts", "prompts/list", "prompts", "prompts/get"),
)


def _list_all(
    session: McpSession, method: str, key: str, timeout_s: float
) -> tuple[list[dict[str, Any]], str]:
    """The items a list method returns over up to three pages, and why it could not be
    read ("" when it could)."""
    items: list[dict[str, Any]] = []
    cursor: object = None
    for _ in range(3):
        reply = session.request(method, {"cursor": cursor} if cursor else {}, timeout_s)
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get(key), list):
            return items, _outcome(reply) if "result" not in reply else "malformed"
        items += [i for i in result[key][:64] if isinstance(i, dict)]
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return items, ""


def _args_of(prompt: dict[str, Any]) -> list[dict[str, Any]]:
    declared = prompt.get("arguments")
    return [a for a in declared[:32] if isinstance(a, dict)] if isinstance(declared, list) else []


def _tool_key(tool: wire.McpTool) -> str:
    return json.dumps([tool.name, tool.description, tool.input_schema], sort_keys=True)


def _list_tools(session: McpSession, timeout_s: float) -> tuple[list[wire.McpTool], str]:
    """The tools the server lists, and why the list could not be read ("" when it
    could: never an empty list passed off as the server's answer)."""
    tools: list[wire.McpTool] = []
    cursor: object = None
    for _ in range(3):  # pages
        reply = session.request("tools/list", {"cursor": cursor} if cursor else {}, timeout_s)
        result = reply.get("result")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return tools, _outcome(reply) if "result" not in reply else "malformed"
        for tool in result["tools"][:64]:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                schema = tool.get("inputSchema")
                cut = _shallow(schema, _SCHEMA_DEPTH) if isinstance(schema, dict) else {}
                tools.append(
                    wire.McpTool(
                        name=tool["name"][:200],
                        description=str(tool.get("description", ""))[:4000],
                        input_schema=cut if isinstance(cut, dict) else {},
                    )
                )
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return tools, ""


_SCHEMA_DEPTH = 6
_SCHEMA_ITEMS = 64


def _shallow(value: object, depth: int) -> object:
    """The schema cut to a few levels and items (iteratively copied), so no server can
    make the log deep or huge; what is cut is marked."""
    if not isinstance(value, (dict, list)):
        return value if not isinstance(value, str) else value[:500]
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[object, Any, int]] = [(value, root, depth)]
    while stack:
        source, target, left = stack.pop()
        pairs = (
            list(source.items())[:_SCHEMA_ITEMS]
            if isinstance(source, dict)
            else list(enumerate(source[:_SCHEMA_ITEMS]))  # type: ignore[index]
        )
        for key, item in pairs:
            if isinstance(item, (dict, list)):
                if left <= 1:
                    copied: Any = "(cut: nested too deep)"
                else:
                    copied = {} if isinstance(item, dict) else []
                    stack.append((item, copied, left - 1))
            else:
                copied = item[:500] if isinstance(item, str) else item
            if isinstance(target, dict):
                target[str(key)[:200]] = copied
            else:
                target.append(copied)
    return root


def _outcome(reply: dict[str, Any]) -> str:
    if "failure" in reply:
        return str(reply["failure"])
    if "error" in reply:
        return "error"
    result = reply.get("result")
    if isinstance(result, dict) and result.get("isError"):
        return "tool_error"
    return "ok" if "result" in reply else "malformed"


# --- the environment ---------------------------------------------------------------------

# What a step's own environment (an MCP server's `env`) may extend, never replace: the
# harness's value comes first, the artifact's is appended.
ADDITIVE_ENV = {"PATH": ":", "LD_PRELOAD": ":"}
# Variables the observation depends on even when the harness leaves them unset: where
# Python finds its user site (the MCP SDK's path), and libfaketime's settings (the clock
# profiles). An artifact never sets these for the steps it is observed in.
OBSERVATION_ENV = ("PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONHOME")
OBSERVATION_ENV_PREFIXES = ("FAKETIME", "DONT_FAKE", "NO_FAKE")


def env_refused(base: Collection[str], key: str) -> bool:
    """Whether a step's own `key` would replace what the observation depends on."""
    if key in ADDITIVE_ENV:
        return False
    return key in base or key in OBSERVATION_ENV or key.startswith(OBSERVATION_ENV_PREFIXES)


def as_a_shell_starts(env: dict[str, str], step: wire.PlannedStep) -> dict[str, str]:
    """What bash adds to the environment of a command it starts: its working directory,
    its level, and the command's path."""
    return {**env, "PWD": step.cwd, "SHLVL": "1", "_": step.argv[0] if step.argv else ""}


def merge_env(base: dict[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The harness's environment with a step's own added: additive variables extended
    after the harness's value, anything the observation depends on left as it was."""
    merged = dict(base)
    for key, value in extra.items():
        if env_refused(base, key):
            continue
        if key not in ADDITIVE_ENV or not base.get(key):
            merged[key] = value
        elif value:
            merged[key] = base[key] + ADDITIVE_ENV[key] + value
    return merged


# --- the plan ----------------------------------------------------------------------------


def run_step(
    step: wire.PlannedStep,
    env: dict[str, str],
    scanner: Scanner,
    deadline: float,
) -> wire.StepLog:
    """One step; `deadline` is the profile's wall backstop, which no step outlives."""
    env = as_a_shell_starts(merge_env(env, step.env), step)
    backstop = min(step.timeout_s * BACKSTOP_FACTOR, max(0.1, deadline - time.monotonic()))
    started = time.monotonic()
    done = wire.StepLog(step.name)
    try:
        if step.mcp is not None:
            timeout = min(step.timeout_s, backstop)
            mcp = run_mcp(step, step.mcp, env, scanner, time.monotonic() + timeout)
            done = wire.StepLog(step.name, mcp=mcp)
        else:
            child = Child(list(step.argv), step.cwd, env, step.stdin.encode())
            exit_code, output_bytes, tail, stopped = child.wait(step.timeout_s, backstop)
            done = wire.StepLog(
                step.name, exit_code, exit_code is None, output_bytes, tail, stopped=stopped
            )
    except (OSError, ValueError, RecursionError) as exc:
        done = wire.StepLog(step.name, error=f"{type(exc).__name__}: {str(exc)[:200]}")
    return replace(done, canary_hits=scanner.scan(), started=started)


def _tree_cpu_s() -> float:
    """CPU seconds of the harness and of every step it has reaped."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def fit_log(log: wire.HarnessLog, cap: int) -> bytes:
    """The log as JSON within `cap` bytes: when the artifact made it bigger (hits, tools,
    calls), per-step detail is cut down step by step and the cut is recorded."""
    data = _encoded(log)
    for keep in (64, 16, 4, 0):
        if len(data) <= cap:
            return data
        log = log.cut(keep)
        data = _encoded(log)
    if len(data) > cap:
        data = _encoded(
            wire.HarnessLog(
                skipped=log.skipped,
                errors=log.errors,
                survivors=log.survivors,
                truncated=True,
                layout_done_ns=log.layout_done_ns,
            )
        )
    return data


def _encoded(log: wire.HarnessLog) -> bytes:
    return json.dumps(log.to_json()).encode()


def main() -> None:
    result_fd = int(os.environ.pop("ASSAY_RESULT_FD"))
    os.set_inheritable(result_fd, False)  # no child inherits the result channel
    _undumpable()
    look_like_a_login_shell()
    # Servers may answer with JSON nested thousands deep; it is parsed (and then cut
    # down by _shallow) rather than dropped as unreadable.
    sys.setrecursionlimit(_PARSE_DEPTH)
    started = time.monotonic()
    steps: list[wire.StepLog] = []
    skipped: list[str] = []
    errors: list[str] = []
    lingering: tuple[str, ...] = ()
    layout_done_ns = 0
    cap = 1 << 20
    try:
        plan_path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), wire.PLAN_FILE)
        with open(plan_path, "rb") as handle:
            plan = wire.HarnessPlan.from_json(json.loads(handle.read()))
        if plan.inputs:
            # Read: nothing of the harness is left for the artifact to find.
            shutil.rmtree(plan.inputs, ignore_errors=True)
        cap = plan.log_cap
        # No step starts once the harness's tree has spent its CPU deadline, or its wall
        # backstop has passed (steps slowed by load take longer, not more CPU).
        deadline = started + plan.deadline_s * BACKSTOP_FACTOR
        lay_out_home(plan)
        if plan.repo is not None:
            make_repo(plan.repo)
        scanner = Scanner(plan)
        add_site_paths(plan.user_site, plan.site_paths)
        env = dict(plan.env)
        # Anything the artifact's tree can make fail here (a copy it breaks) is recorded
        # and the steps still run: they then fail on their own, visibly.
        try:
            copy_artifact(plan)
        except (OSError, shutil.Error) as exc:
            errors.append(f"copying the artifact failed: {type(exc).__name__}")
        layout_done_ns = layout_done(plan.stage)
        for step in plan.steps:
            if time.monotonic() >= deadline or _tree_cpu_s() >= plan.deadline_s:
                skipped.append(step.name)
                continue
            done = run_step(step, env, scanner, deadline)
            if done.stopped == "wall" and time.monotonic() < deadline:
                # Still working when the backstop came: the host was busy. Once more,
                # so a passing spike of load does not decide what is seen.
                done = replace(run_step(step, env, scanner, deadline), attempts=2)
            steps.append(done)
            if step.needed and done.exit != 0:
                break  # what it builds is missing: the validator names the failed step
        lingering = survivors()
    except Exception as exc:
        errors.append(f"harness error: {type(exc).__name__}: {str(exc)[:200]}")
    log = wire.HarnessLog(
        steps=tuple(steps),
        skipped=tuple(skipped),
        errors=tuple(errors),
        survivors=lingering,
        elapsed_s=round(time.monotonic() - started, 3),
        layout_done_ns=layout_done_ns,
    )
    view = memoryview(fit_log(log, cap))
    while view:
        view = view[os.write(result_fd, view) :]
    os.close(result_fd)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
