"""Host-side directories of a run: the runtime tree, tmpfs mounts, copies, sweeping.

Layout: `<runtime>/<owner>/<run>/`, where the owner names the validator process
(pid and start time). A directory whose owner is gone is stale: the tracers and
sandboxes still naming it are killed, its mounts are detached and it is deleted
by the next validator that starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import os
import secrets
import shutil
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

from assay.sandbox.interface import InfrastructureError
from assay.sandbox.owners import owner_alive, owner_tag

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_SHARED = 2, 4, 4096, 1 << 20
_MNT_DETACH = 2


def mount_tmpfs(
    target: Path,
    size: int | None,
    uid: int,
    gid: int,
    mode: int = 0o700,
    inodes: int | None = None,
) -> None:
    """A tmpfs at `target`; `size` None only for trees the validator alone writes."""
    options = f"mode={mode:o},uid={uid},gid={gid}" + (f",size={size}" if size is not None else "")
    if inodes is not None:
        options += f",nr_inodes={inodes}"
    _mount(b"tmpfs", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode())


def shared_mount(target: Path) -> None:
    """Make `target` a mount of its own that passes later mounts under it on to its
    copies (a sandbox started with it bound sees what is mounted there afterwards)."""
    _mount(bytes(target), target, None, _MS_BIND, None)
    _mount(b"none", target, None, _MS_SHARED, None)


def _mount(
    source: bytes, target: Path, fstype: bytes | None, flags: int, data: bytes | None
) -> None:
    if _libc.mount(source, bytes(target), fstype, flags, data) != 0:
        err = ctypes.get_errno()
        raise InfrastructureError(f"cannot mount {target}: {os.strerror(err)}")


# The one modification time every copied entry gets (2000-01-01 UTC: zip takes it).
COPY_MTIME = 946_684_800


def copy_tree(source: Path, target: Path) -> None:
    """Copy directories, regular files and symlinks (as links) into `target`, which exists.

    What the copy shows depends only on what an artifact's digest covers (paths,
    bytes, link texts) and the executable bit: modes are 0755/0644 and every time
    is `COPY_MTIME`, whatever the host's umask or the files' history. Anything
    else (a fifo, a device) is refused rather than opened: reading one could
    block or never end.
    """
    try:
        for here, dirs, files in os.walk(source):  # symlinked directories are not entered
            into = target / Path(here).relative_to(source)
            for name in dirs + files:
                src, dst = Path(here, name), into / name
                mode = os.lstat(src).st_mode
                if stat.S_ISLNK(mode):
                    os.symlink(os.readlink(src), dst)
                elif stat.S_ISDIR(mode):
                    dst.mkdir()
                    os.chmod(dst, 0o755)
                elif stat.S_ISREG(mode):
                    shutil.copyfile(src, dst)
                    os.chmod(dst, 0o755 if mode & 0o111 else 0o644)
                else:
                    raise InfrastructureError(f"{src}: not a regular file, directory or symlink")
        # Times last: creating entries moves their directory's.
        for here, dirs, files in os.walk(target):
            for name in (".", *dirs, *files):
                os.utime(Path(here, name), (COPY_MTIME, COPY_MTIME), follow_symlinks=False)
    except OSError as exc:
        raise InfrastructureError(f"cannot copy {source}: {exc}") from exc


def unmount(target: Path) -> None:
    if _libc.umount2(bytes(target), _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise InfrastructureError(f"cannot unmount {target}: {os.strerror(err)}")


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below `root`, deepest first."""
    prefix = str(root).rstrip("/") + "/"
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix):
            found.append(Path(point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


# The programs a run starts whose argv names its directory. A tracer killed before
# it attached its first child leaves that child stopped (it stops itself to wait
# for the attach) with init as its parent: it still carries strace's argv. The eBPF
# session's bpftrace names its program in the validator's directory.
_RUN_PROGRAMS = (b"strace", b"bwrap", b"bpftrace")


def _run_processes(directory: Path) -> Iterator[tuple[int, str]]:
    """Each strace, bwrap or bpftrace with an argument under `directory`, and the path
    of that argument relative to it."""
    prefix = str(directory).rstrip("/").encode() + b"/"
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "cmdline"), "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue  # gone, or a kernel thread
        if os.path.basename(argv[0]) not in _RUN_PROGRAMS:
            continue
        named = next((arg for arg in argv[1:] if arg.startswith(prefix)), None)
        if named is not None:
            yield int(entry.name), named[len(prefix) :].decode(errors="replace")


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def kill_run_processes(directory: Path) -> None:
    """SIGKILL every strace, bwrap or bpftrace whose argv names a path under `directory`."""
    for pid, _ in _run_processes(directory):
        _kill(pid)


def remove_tree(root: Path) -> None:
    for point in mounts_under(root):
        unmount(point)
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():
        raise InfrastructureError(f"cannot remove {root}")


class RuntimeTree:
    """This validator's directory under the runtime root, created on first use."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.owner_dir = base / owner_tag()

    def ensure(self) -> Path:
        try:
            self.base.mkdir(mode=0o711, parents=True, exist_ok=True)
            self.owner_dir.mkdir(mode=0o711, exist_ok=True)
        except OSError as exc:
            raise InfrastructureError(f"runtime directory {self.owner_dir}: {exc}") from exc
        closed = [p for p in (self.base, *self.base.parents) if not p.stat().st_mode & 0o001]
        if closed:
            # bubblewrap runs as the unprivileged sandbox user and must reach these paths.
            raise InfrastructureError(f"runtime directory {self.base}: {closed[0]} is not o+x")
        return self.owner_dir

    def new_run_dir(self) -> Path:
        run = self.ensure() / f"run-{secrets.token_hex(6)}"
        run.mkdir(mode=0o711)
        return run

    def release(self) -> None:
        """Remove this validator's directory (at exit: nothing of ours may remain)."""
        self.remove_owner(self.owner_dir.name)

    def remove_owner(self, tag: str) -> None:
        """Kill the tracers and sandboxes of the validator named by `tag`, and remove
        its directory."""
        owner_dir = self.base / tag
        kill_run_processes(owner_dir)
        if owner_dir.exists():
            remove_tree(owner_dir)

    def sweep_stale(self) -> int:
        if not self.base.is_dir():
            return 0
        # By argv, not by directory: a sweeper that did not know them may have
        # removed the directory already.
        for pid, named in _run_processes(self.base):
            if not owner_alive(named.partition("/")[0]):
                _kill(pid)
        stale = [p for p in self.base.iterdir() if p.is_dir() and not owner_alive(p.name)]
        for owner_dir in stale:
            remove_tree(owner_dir)
        return len(stale)


@contextlib.contextmanager
def host_lock(base: Path) -> Iterator[None]:
    """Held while removing what validators left under `base`: validators on one host
    (several Ray workers, say) and their watchdogs may sweep at once."""
    base.mkdir(mode=0o711, parents=True, exist_ok=True)
    lock = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the descriptor closes
        yield
    finally:
        os.close(lock)


def default_runtime_base() -> Path:
    override = os.environ.get("ASSAY_RUNTIME_DIR")
    if override:
        return Path(override)
    run = Path("/run")
    return run / "assay" if os.access(run, os.W_OK) else Path("/tmp/assay-runtime")
