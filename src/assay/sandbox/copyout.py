"""Copy a file out of a sandbox's workspace without trusting anything in it.

The name must be a single path component, opened relative to a descriptor of
the workspace root with O_NOFOLLOW, so neither the file nor any directory on
the way can be a symlink the sandboxed program planted. O_NONBLOCK keeps a FIFO
from blocking the open; anything but a regular file is refused; reads stop at
the cap.
"""

from __future__ import annotations

import os
import stat

from assay.sandbox.interface import CopiedFile, CopyStatus


def copy_out(root_fd: int, name: str, cap: int) -> CopiedFile:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"copy-out name must be one path component, got {name!r}")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(name, flags, dir_fd=root_fd)
    except FileNotFoundError:
        return CopiedFile(name, CopyStatus.MISSING)
    except OSError:  # ELOOP: a symlink; anything else we may not open is no regular file
        return CopiedFile(name, CopyStatus.NOT_REGULAR)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return CopiedFile(name, CopyStatus.NOT_REGULAR)
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 16, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            return CopiedFile(name, CopyStatus.TOO_LARGE)
        return CopiedFile(name, CopyStatus.OK, b"".join(chunks))
    finally:
        os.close(fd)
