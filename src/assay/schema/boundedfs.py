"""Directory trees and files from an untrusted source, walked and read within limits.

The walk is iterative (a 10,000-deep tree costs no recursion), never follows a
symlink (a link loop is just a link), and stops with `TreeLimitError` past its
depth or entry cap; reads open with O_NOFOLLOW and never take more than asked,
so a sparse terabyte file costs what the cap allows.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


class TreeLimitError(ValueError):
    """The tree is deeper or larger than its caps allow, or a file is not readable as asked."""


@dataclass(frozen=True)
class TreeLimits:
    max_depth: int = 32
    max_entries: int = 20_000


@dataclass(frozen=True)
class Entry:
    """One entry below the walked root; `relative` never contains `..`."""

    relative: PurePosixPath
    path: Path
    mode: int
    size: int

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.mode)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self.mode)


def walk(root: Path, limits: TreeLimits = TreeLimits()) -> Iterator[Entry]:
    """Every entry below `root`, depth-first in sorted name order (deterministic)."""
    seen = 0
    stack: list[tuple[Path, PurePosixPath, int]] = [(root, PurePosixPath(), 0)]
    while stack:
        directory, relative, depth = stack.pop()
        try:
            with os.scandir(directory) as scan:
                names = sorted(e.name for e in scan)
        except OSError as exc:
            where = relative or "."
            raise TreeLimitError(f"{where}: unreadable directory: {exc.strerror}") from exc
        children: list[tuple[Path, PurePosixPath, int]] = []
        for name in names:
            seen += 1
            if seen > limits.max_entries:
                raise TreeLimitError(f"more than {limits.max_entries} entries")
            path = directory / name
            try:
                st = path.lstat()
            except OSError as exc:
                raise TreeLimitError(f"{relative / name}: {exc.strerror}") from exc
            entry = Entry(relative / name, path, st.st_mode, st.st_size)
            yield entry
            if entry.is_dir:
                if depth + 1 >= limits.max_depth:
                    raise TreeLimitError(f"{entry.relative}: deeper than {limits.max_depth} levels")
                children.append((path, entry.relative, depth + 1))
        stack.extend(reversed(children))


def regular_file(root: Path, relative: str | PurePosixPath) -> Path | None:
    """`root/relative` when it is a regular file reached without passing through a
    symlink or leaving `root`; None otherwise (never raises)."""
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        return None
    path = root
    try:
        for n, part in enumerate(parts):
            path = path / part
            mode = path.lstat().st_mode
            last = n == len(parts) - 1
            if (last and not stat.S_ISREG(mode)) or (not last and not stat.S_ISDIR(mode)):
                return None
    except (OSError, ValueError):
        return None
    return path


def read_capped(path: Path, limit: int) -> bytes:
    """At most `limit` bytes from the start of a regular file, never through a symlink."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TreeLimitError(f"{path.name}: cannot open: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TreeLimitError(f"{path.name}: not a regular file")
        return handle.read(limit)


def read_limited(path: Path, limit: int) -> bytes:
    """The whole file, refused with `TreeLimitError` when it is larger than `limit`."""
    data = read_capped(path, limit + 1)
    if len(data) > limit:
        raise TreeLimitError(f"{path.name}: larger than {limit} bytes")
    return data
