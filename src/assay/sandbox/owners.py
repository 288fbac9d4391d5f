"""Which process owns what a validator leaves on the host.

A directory or group named after its owner (pid and kernel start time) can be told
stale, its owner gone, by whoever comes next: a pid alone may have been reused.
"""

from __future__ import annotations

import os
from pathlib import Path


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (field 22 of /proc/pid/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{process_start_time(pid)}"


def owner_alive(tag: str) -> bool:
    pid, _, start = tag.partition("-")
    return pid.isdigit() and process_start_time(int(pid)) == start
