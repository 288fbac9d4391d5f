"""The planted home: a user's files written from outside before the command starts,
and a kernel watch on the watched ones, read once the command's tree is gone.

The watch is inotify on each file's inode, set by the validator outside the
sandbox's namespaces: a read or write through any path, descriptor, symlink, hard
link or mount alias of the file reaches the same inode, so the kernel reports it
whatever name the program used. (fanotify would also name the process, but needs
privileges in the watched mount's namespace; which process did it is not needed.)
A watched directory reports its new entries, for watched names written fresh.

What the files cannot show: their change time (ctime) and birth time are the
moment they were planted, seconds before the command starts; nothing but the
clock sets them. Their modification and access times are set back. (A home read
from a filesystem image would carry old change times: squashfs reports its stored
time as all three, and an overlay above it takes the writes. Not done: it costs a
loop mount per run, and an overlay on /home shows in /proc/self/mountinfo.)
"""

from __future__ import annotations

import contextlib
import os
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
_COPY_TIMEOUT_S = 60  # a few dozen small files: seconds only on a host in trouble


def plant(root: Path, stage: Path, home: Home, uid: int, gid: int) -> None:
    """Plant the home's files at `root`/<user> (the host side of /home), owned by
    `uid`:`gid`, their times and their directories' set `home.age_s` back.

    The validator never opens a planted file: it writes the home under `stage` (a
    directory of its own, not watched) and a `cp` of its own copies it into place. A
    file the validator holds open is, for that moment, open too in every child another
    of its threads forks then (to start a sandbox), until that child execs; the child's
    late close of a file opened for writing reached the watch set meanwhile as a write
    nothing in the sandbox did (issue 26). `cp` has exited, its files closed, before
    the watch is set. (No open flag keeps a descriptor out of a fork.)
    """
    _write_home(stage / home.user, home, uid, gid)
    copy = ("cp", "-R", "--preserve=mode,ownership,timestamps", "--")
    try:
        subprocess.run(
            (*copy, stage / home.user, root / home.user),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=True,
            timeout=_COPY_TIMEOUT_S,
        )
    except subprocess.CalledProcessError as exc:
        stderr = exc.stderr.decode(errors="replace").strip()
        raise InfrastructureError(f"cannot plant the home: {stderr[-300:]}") from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfrastructureError(f"cannot plant the home: {exc}") from exc


def _write_home(base: Path, home: Home, uid: int, gid: int) -> None:
    """The home's tree at `base`, as it is to be planted."""
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
