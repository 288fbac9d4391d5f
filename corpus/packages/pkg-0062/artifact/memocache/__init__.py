"""Disk memoisation for pure functions."""

import functools
import hashlib
import os
import pickle
from pathlib import Path

ROOT = Path(os.environ.get("MEMOCACHE_DIR", Path.home() / ".cache" / "memocache"))


def memoize(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        key = hashlib.sha256(pickle.dumps((func.__qualname__, args, sorted(kwargs.items())))).hexdigest()
        path = ROOT / key[:2] / key
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = func(*args, **kwargs)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(value))
        return value

    return wrapper
