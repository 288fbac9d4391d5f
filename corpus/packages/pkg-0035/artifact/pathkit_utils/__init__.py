"""Atomic writes and filtered directory walks."""

import os
import tempfile


def atomic_write(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def walk_files(root, suffix=""):
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if name.endswith(suffix):
                yield os.path.join(dirpath, name)
