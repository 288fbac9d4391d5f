"""A directory tree the sandboxed program could write, recorded from the host side.

The validator records a tree before the command starts and again once its process
tree is gone: every entry's type, permission bits, content digest (a symlink's
target, as written) and the inode and change time it has, so that whatever path
trick wrote it (a relative rename, a symlink, `..`, a descriptor), the change shows.
The walk is hostile-safe: every open is relative to the directory's own descriptor
with O_NOFOLLOW (a symlink is recorded, never followed; the validator, root, never
reads through one), only regular files are opened (O_NONBLOCK: a FIFO cannot block
it), and it stops at its caps on entries, depth and bytes hashed, naming which one:
a tree cut short is a record that may miss a change, never a silent one.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

from assay.sandbox.interface import RecordedTree, TreeEntry

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHUNK = 1 << 16


@dataclass(frozen=True)
class TreeCaps:
    """How much of a tree one recording may take."""

    entries: int = 20_000
    depth: int = 64
    hashed_bytes: int = 64 << 20  # the workspace's size: a full workspace is hashed whole


class _Cut(Exception):
    """A cap was reached: the recording ends here, saying which."""


def record_tree(root: str, caps: TreeCaps = TreeCaps()) -> RecordedTree:
    """Every entry below the host directory `root`, by its path relative to it. A root
    that does not exist (yet) is an empty tree; one that is not a directory is cut."""
    entries: dict[str, TreeEntry] = {}
    try:
        fd = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        return RecordedTree()
    except OSError as exc:
        return RecordedTree(cut=f"the tree's root cannot be opened: {exc.strerror}")
    walker = _Walker(caps, entries)
    try:
        walker.walk(fd, "", 0)
    except _Cut as cut:
        return RecordedTree(entries, cut=str(cut))
    finally:
        os.close(fd)
    return RecordedTree(entries)


class _Walker:
    def __init__(self, caps: TreeCaps, entries: dict[str, TreeEntry]) -> None:
        self.caps = caps
        self.entries = entries
        self.hashed = 0

    def walk(self, dir_fd: int, prefix: str, depth: int) -> None:
        if depth >= self.caps.depth:
            raise _Cut(f"deeper than {self.caps.depth} levels at {prefix!r}")
        try:
            names = sorted(os.listdir(dir_fd))
        except OSError as exc:
            raise _Cut(f"directory {prefix or '.'!r} unreadable: {exc.strerror}") from exc
        for name in names:
            if len(self.entries) >= self.caps.entries:
                raise _Cut(f"more than {self.caps.entries} entries")
            relative = f"{prefix}{_shown(name)}"
            try:
                st = os.lstat(name, dir_fd=dir_fd)
            except FileNotFoundError:
                continue  # gone meanwhile: it is not in the tree
            except OSError as exc:
                raise _Cut(f"{relative!r} cannot be examined: {exc.strerror}") from exc
            self.entries[relative] = self.entry(dir_fd, name, st)
            if stat.S_ISDIR(st.st_mode):
                self.descend(dir_fd, name, relative, depth)

    def descend(self, dir_fd: int, name: str, relative: str, depth: int) -> None:
        try:
            sub = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise _Cut(f"directory {relative!r} cannot be opened: {exc.strerror}") from exc
        try:
            self.walk(sub, relative + "/", depth + 1)
        finally:
            os.close(sub)

    def entry(self, dir_fd: int, name: str, st: os.stat_result) -> TreeEntry:
        kind = _kind(st.st_mode)
        digest = ""
        if kind == "file":
            digest = self.digest(dir_fd, name, st)
        elif kind == "symlink":
            try:
                target = os.readlink(name, dir_fd=dir_fd)
            except OSError as exc:
                raise _Cut(f"link {name!r} cannot be read: {exc.strerror}") from exc
            digest = hashlib.sha256(os.fsencode(target)).hexdigest()
        return TreeEntry(
            kind,
            stat.S_IMODE(st.st_mode),
            digest,
            size=st.st_size,
            inode=st.st_ino,
            changed_ns=st.st_ctime_ns,
        )

    def digest(self, dir_fd: int, name: str, st: os.stat_result) -> str:
        if self.hashed + st.st_size > self.caps.hashed_bytes:
            raise _Cut(f"more than {self.caps.hashed_bytes} bytes of files to hash")
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise _Cut(f"{name!r} cannot be opened: {exc.strerror}") from exc
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
                raise _Cut(f"{name!r} was replaced while it was recorded")
            hasher = hashlib.sha256()
            while chunk := os.read(fd, _CHUNK):
                self.hashed += len(chunk)
                if self.hashed > self.caps.hashed_bytes:
                    raise _Cut(f"more than {self.caps.hashed_bytes} bytes of files to hash")
                hasher.update(chunk)
            return hasher.hexdigest()
        finally:
            os.close(fd)


def _shown(name: str) -> str:
    """A name as text that encodes (bytes that are no UTF-8 shown as escapes, as the
    tracers show them), while the original still names the entry in every call."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"  # a FIFO, a socket, a device node
