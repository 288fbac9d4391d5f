"""The planted home: a user's files written from outside before the command starts,
and a kernel watch on the watched ones, read once the command's tree is gone.

The watch is inotify on each file's inode, set by the validator outside the
sandbox's namespaces: a read or write through any path, descriptor, symlink, hard
link or mount alias of the file reaches the same inode, so the kernel reports it
whatever name the program used. (fanotify would also name the process, but needs
privileges in the watched mount's namespace; which process did it is not needed.)
A watched directory reports its new entries, for watched names written fresh.

The home is its own filesystem: an ext4 image the validator builds from the staged
tree before the command starts, every entry's change and birth time set back with
its modification and access times (`debugfs` writes them into the unmounted image:
no syscall sets a change time, and no clock namespace reaches it), then mounted
over a loop device at /home/<user>. The mount is made on the host side after the
sandbox has started; /home is a shared mount there, and the sandbox's copy of it a
slave, so the mount reaches the waiting sandbox. What the artifact then writes gets
a fresh change time, as on any machine. What shows instead: the home is a separate
filesystem of the workspace's size (64 MiB at least), from a loop device
(/proc/self/mountinfo).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from inotify_simple import INotify
from inotify_simple import flags as F

from assay.sandbox.interface import Home, HomeEvent, InfrastructureError

_READ = F.ACCESS | F.CLOSE_NOWRITE
_WRITE = F.MODIFY | F.CLOSE_WRITE
_FILE_MASK = _READ | _WRITE | F.ATTRIB | F.DELETE_SELF | F.MOVE_SELF | F.DONT_FOLLOW
_DIR_MASK = F.CREATE | F.MOVED_TO | F.ONLYDIR | F.DONT_FOLLOW
_FILE_EVENTS = (
    (_READ, "read"),
    (_WRITE, "write"),
    (F.ATTRIB, "attrib"),
    (F.DELETE_SELF, "deleted"),
    (F.MOVE_SELF, "moved"),
)
_EVENTS_KEPT = 512  # distinct events; past this the watch counts as lost
_HOME_MODE = 0o750
_DIR_MODE = 0o755
_PRIVATE_DIR_MODE = 0o700  # a directory holding a file only its owner may read
# Room for as many entries as a real home's first levels hold, however small the run's
# workspace (an ext4 of 64 MiB has 16384 inodes).
_IMAGE_FLOOR = 64 << 20
_TIMES = ("atime", "mtime", "ctime", "crtime")
_TOOL_TIMEOUT_S = 60  # a few dozen small files: seconds only on a host in trouble


def plant(root: Path, stage: Path, home: Home, owner: tuple[int, int], size: int) -> None:
    """Plant the home's files at `root`/<user> (the host side of /home), owned by
    `owner` (uid, gid), every time of them and of their directories set `home.age_s` back.

    The validator never opens a planted file: it writes the home under `stage` (a
    directory of its own, not watched), builds the image from it with `mke2fs` and
    `debugfs`, and mounts that. A file the validator holds open is, for that moment,
    open too in every child another of its threads forks then (to start a sandbox),
    until that child execs; the child's late close of a file opened for writing
    reached the watch set meanwhile as a write nothing in the sandbox did (issue 26).
    The tools have exited, their files closed, before the watch is set.
    """
    staged = stage / home.user
    uid, gid = owner
    when = _write_home(staged, home, uid, gid)
    image = stage / f"{home.user}.img"
    target = root / home.user
    target.mkdir(mode=_HOME_MODE)
    # A sparse file: only what is written takes memory. No journal: nothing outlives
    # the run, and none is written at mount.
    make = ("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-I", "256", "-m", "0")
    owned = ("-O", "^has_journal", "-E", f"root_owner={uid}:{gid}", "-d", staged)
    _tool("build", (*make, *owned, image, f"{max(size, _IMAGE_FLOOR) // 1024}k"))
    _tool("date", ("debugfs", "-w", "-f", "-", image), _backdating(staged, when))
    _tool("mount", ("mount", "-t", "ext4", "-o", "loop,nosuid,nodev", image, target))


def _backdating(staged: Path, when: float) -> bytes:
    """debugfs commands that remove the lost+found no home has, and set every entry's
    times, change and birth time with them, to `when`."""
    stamp = f"@{int(when)}"
    lines = ["rmdir lost+found"]
    for path in (staged, *sorted(staged.rglob("*"))):
        name = str(path.relative_to(staged))
        if any(c in name for c in '"\\\n'):
            raise InfrastructureError(f"cannot plant the home: unsupported name {name!r}")
        lines += [f'set_inode_field "{name}" {field} {stamp}' for field in _TIMES]
    return "\n".join(lines).encode() + b"\n"


def _tool(what: str, argv: tuple[str | Path, ...], stdin: bytes = b"") -> None:
    # The system tools live in sbin, which a validator's PATH may leave out.
    program = shutil.which(argv[0], path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if program is None:
        raise InfrastructureError(f"cannot plant the home: {argv[0]} is not installed")
    try:
        done = subprocess.run(
            (program, *argv[1:]), input=stdin, capture_output=True, timeout=_TOOL_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureError(f"cannot plant the home ({what}): {exc}") from exc
    # debugfs reports a failed command on stderr and still exits 0.
    failed = done.returncode != 0 or (argv[0] == "debugfs" and b": " in done.stderr)
    if failed:
        said = done.stderr.decode(errors="replace").strip()
        raise InfrastructureError(f"cannot plant the home ({what}): {said[-300:]}")


def _write_home(base: Path, home: Home, uid: int, gid: int) -> float:
    """The home's tree at `base`, as it is to be planted; the time it is dated to."""
    base.mkdir(mode=_HOME_MODE)
    modes: dict[Path, int] = {base: _HOME_MODE}
    for item in home.files:
        target = base / item.path
        if base not in target.parents:
            raise ValueError(f"home file outside the home: {item.path!r}")
        for parent in reversed(target.parents):
            if base in parent.parents:
                private = item.mode & 0o077 == 0
                mode = _PRIVATE_DIR_MODE if private else _DIR_MODE
                modes[parent] = min(modes.get(parent, mode), mode)
                parent.mkdir(exist_ok=True)
        target.write_bytes(item.data)
        os.chmod(target, item.mode)
        os.chown(target, uid, gid)
    when = time.time() - home.age_s
    for item in home.files:
        os.utime(base / item.path, (when, when))
    # Deepest first: setting a directory's times after its entries keeps them.
    for directory in sorted(modes, key=lambda d: len(d.parts), reverse=True):
        os.chmod(directory, modes[directory])
        os.chown(directory, uid, gid)
        os.utime(directory, (when, when))
    return when


def _names(bits: int) -> str:
    return "|".join(flag.name for flag in F.from_mask(bits))


class HomeWatch:
    """inotify on the watched files of a planted home; `collect` once the run is over."""

    def __init__(self, root: Path, home: Home) -> None:
        self._inotify = INotify()
        self._files: dict[int, tuple[str, Path]] = {}
        self._dirs: dict[int, str] = {}
        try:
            for item in home.files:
                if item.watched:
                    host = root / home.user / item.path
                    wd = self._inotify.add_watch(host, _FILE_MASK)
                    self._files[wd] = (f"{home.path}/{item.path}", host)
            for relative in home.new_entries:
                shown = f"{home.path}/{relative}".rstrip("/")
                self._dirs[self._inotify.add_watch(root / home.user / relative, _DIR_MASK)] = shown
        except BaseException:
            self.close()
            raise

    def collect(self) -> tuple[tuple[HomeEvent, ...], bool]:
        """What the kernel reported, in order, and whether some of it was lost; each
        event with the inotify flags that showed it."""
        seen: dict[tuple[str, str], int] = {}  # (path, event) -> the flags behind it
        lost = False
        while batch := self._inotify.read(timeout=0):
            for event in batch:
                if event.mask & F.Q_OVERFLOW:
                    lost = True
                for path, kind, bits in self._events(event.wd, event.mask, event.name):
                    if (path, kind) in seen or len(seen) < _EVENTS_KEPT:
                        seen[(path, kind)] = seen.get((path, kind), 0) | bits
                    else:
                        lost = True
        for path, host in self._files.values():
            with contextlib.suppress(OSError):
                if os.lstat(host).st_nlink > 1:  # a hard link made to it, and still there
                    seen.setdefault((path, "linked"), 0)
        events = (HomeEvent(path, kind, _names(bits)) for (path, kind), bits in seen.items())
        return tuple(events), lost

    def _events(self, wd: int, mask: int, name: str) -> list[tuple[str, str, int]]:
        if wd in self._dirs:
            created = mask & (F.CREATE | F.MOVED_TO)
            return [(f"{self._dirs[wd]}/{name}", "created", created)] if created else []
        if wd not in self._files:
            return []
        path = self._files[wd][0]
        return [(path, event, mask & bits) for bits, event in _FILE_EVENTS if mask & bits]

    def close(self) -> None:
        self._inotify.close()
