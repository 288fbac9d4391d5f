"""Paths as the kernel reads them, from the strings a program passed it."""

from __future__ import annotations

import posixpath
import re

# A process's view of its own root (or another's: one sandbox has one root).
_PROC_ROOT = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/root(?=/|$)")
_DELETED = " (deleted)"


def resolved(path: str, directory: str | None = None) -> str:
    """`path` made absolute against `directory` (the directory handle or working
    directory it was passed with), with `//`, `.` and `..` collapsed and every
    `/proc/<pid>/root` prefix dropped. A relative path with no directory stays relative.

    This is the lexical part of the kernel's lookup; the symlinks it follows are not
    known here. A call that opened something is reported by the path the kernel gives
    for what it opened, which has them followed (see the tracer).
    """
    if not path.startswith("/"):
        if not directory:
            return path
        path = f"{directory}/{path}"
    while True:
        path = "/" + posixpath.normpath(path).lstrip("/")
        found = _PROC_ROOT.match(path)
        if found is None:
            return path
        path = path[found.end() :] or "/"


def fd_path(text: str) -> str:
    """The path the kernel shows for an open descriptor, its deletion marker dropped."""
    return text.removesuffix(_DELETED)
