"""Tree-wide resource accounting and limits with cgroups (v2 delegated, or v1).

Every run gets its own group below `assay/<owner>/`, where the owner names the
validator process (pid and start time), so a later validator can tell a stale
group (its owner is gone) from a live one and sweep it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from abc import ABC, abstractmethod
from pathlib import Path

from assay.sandbox.interface import InfrastructureError
from assay.sandbox.owners import owner_alive, owner_tag

CGROUP_ROOT = Path("/sys/fs/cgroup")
_GROUP = "assay"


def _read_int(path: Path) -> int:
    return int(path.read_text().split()[0])


def _key_value(text: str, key: str) -> int | None:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return None


def _kill_listed(procs_file: Path) -> bool:
    """SIGKILL every pid listed; True when the list was already empty."""
    try:
        pids = [int(p) for p in procs_file.read_text().split()]
    except OSError:
        return True
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return not pids


def _remove_dir(path: Path, procs_file: Path) -> None:
    # A group can only be removed once empty; killed processes take a moment to exit.
    deadline = time.monotonic() + 5.0
    while True:
        _kill_listed(procs_file)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise InfrastructureError(f"cannot remove cgroup {path}: {exc}") from exc
            time.sleep(0.005)


class Cgroup(ABC):
    """One run's group: join it, read its accounting, kill and remove it."""

    @property
    @abstractmethod
    def join_files(self) -> tuple[Path, ...]:
        """A single-threaded process joins the group by writing "0" (itself) to each."""

    def permit_join(self, uid: int) -> None:
        """Let the unprivileged launcher (`uid`) move itself in, and nothing else.

        The sandbox never sees the cgroup tree, so this opens no way out of it.
        """
        for path in self.join_files:
            os.chown(path, uid, -1)

    @abstractmethod
    def cpu_s(self) -> float: ...

    @abstractmethod
    def memory_killed(self) -> bool: ...

    @abstractmethod
    def pids_exhausted(self) -> bool: ...

    @abstractmethod
    def peak_memory_bytes(self) -> int: ...

    @abstractmethod
    def kill_all(self) -> None: ...

    @abstractmethod
    def remove(self) -> None: ...


class CgroupDriver(ABC):
    """Creates run groups on one cgroup layout and sweeps stale ones."""

    version: str

    @abstractmethod
    def create(self, memory_bytes: int, pids: int, *, observed: bool = False) -> Cgroup:
        """A new group capped at `memory_bytes` (no swap) and `pids` tasks; `observed`:
        one the eBPF observer watches (on v2, made under the one parent of those)."""

    @abstractmethod
    def owner_dirs(self) -> list[Path]:
        """Every `assay/<owner>` directory, across controllers."""

    @abstractmethod
    def remove_tree(self, owner_dir: Path) -> None: ...

    def release(self) -> None:
        """Remove this validator's own groups (at exit: nothing of ours may remain)."""
        self.remove_owner(owner_tag())

    def remove_owner(self, tag: str) -> None:
        """Kill and remove every group of the validator named by `tag`."""
        for owner_dir in self.owner_dirs():
            if owner_dir.name == tag:
                with contextlib.suppress(FileNotFoundError):  # another remover was quicker
                    self.remove_tree(owner_dir)

    def sweep_stale(self) -> int:
        """Kill and remove groups whose validator is gone; returns how many owners."""
        swept = 0
        for owner_dir in self.owner_dirs():
            if not owner_alive(owner_dir.name):
                self.remove_tree(owner_dir)
                swept += 1
        return swept


_OBSERVED = "observed"  # the parent of the eBPF-observed runs' groups


def _new_run_name() -> str:
    return f"run-{secrets.token_hex(6)}"


class _Counter:
    """A cgroup file read with one pread on a descriptor kept open (polled every few ms)."""

    def __init__(self, path: Path, key: str | None = None) -> None:
        self._fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self._key = key

    def value(self) -> int:
        text = os.pread(self._fd, 4096, 0).decode()
        if self._key is None:
            return int(text)
        found = _key_value(text, self._key)
        if found is None:
            raise InfrastructureError(f"cgroup file has no {self._key!r}")
        return found

    def close(self) -> None:
        os.close(self._fd)


class CgroupV1(Cgroup):
    def __init__(self, dirs: dict[str, Path], memory_bytes: int, pids: int) -> None:
        self._dirs = dirs
        memory = dirs["memory"]
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        memsw = memory / "memory.memsw.limit_in_bytes"
        if memsw.exists():  # swap accounting on: forbid swap outright
            memsw.write_text(str(memory_bytes))
        (memory / "memory.swappiness").write_text("0")
        (dirs["pids"] / "pids.max").write_text(str(pids))
        self._cpu_ns = _Counter(dirs["cpuacct"] / "cpuacct.usage")
        self._oom_kills = _Counter(memory / "memory.oom_control", "oom_kill")
        self._pids_max = _Counter(dirs["pids"] / "pids.events", "max")

    @property
    def join_files(self) -> tuple[Path, ...]:
        # Moving the writing thread itself through `tasks` skips the global
        # threadgroup lock, whose RCU grace period costs ~10 ms per run via cgroup.procs.
        return tuple(d / "tasks" for d in self._dirs.values())

    def cpu_s(self) -> float:
        return self._cpu_ns.value() / 1e9

    def memory_killed(self) -> bool:
        return self._oom_kills.value() > 0

    def pids_exhausted(self) -> bool:
        return self._pids_max.value() > 0

    def peak_memory_bytes(self) -> int:
        return _read_int(self._dirs["memory"] / "memory.max_usage_in_bytes")

    def kill_all(self) -> None:
        # The pids hierarchy lists every task of the tree; loop until it is empty
        # because a forking tree may add members while we kill.
        for _ in range(200):
            if _kill_listed(self._dirs["pids"] / "cgroup.procs"):
                return
            time.sleep(0.002)

    def remove(self) -> None:
        for counter in (self._cpu_ns, self._oom_kills, self._pids_max):
            counter.close()
        for d in self._dirs.values():
            _remove_dir(d, d / "cgroup.procs")


class CgroupV1Driver(CgroupDriver):
    version = "v1"
    CONTROLLERS = ("cpuacct", "memory", "pids")

    def __init__(self, root: Path = CGROUP_ROOT) -> None:
        self._root = root
        self._owner = owner_tag()

    @classmethod
    def available(cls, root: Path = CGROUP_ROOT) -> bool:
        return all(os.access(root / c / "cgroup.procs", os.W_OK) for c in cls.CONTROLLERS)

    def create(self, memory_bytes: int, pids: int, *, observed: bool = False) -> Cgroup:
        # An observed run is known on v2 by its `identity_group`, which is made apart.
        name = _new_run_name()
        dirs = {c: self._root / c / _GROUP / self._owner / name for c in self.CONTROLLERS}
        try:
            for d in dirs.values():
                d.mkdir(parents=True)
            return CgroupV1(dirs, memory_bytes, pids)
        except OSError as exc:
            for d in dirs.values():
                with contextlib.suppress(OSError):
                    d.rmdir()
            raise InfrastructureError(f"cannot create cgroup {name}: {exc}") from exc

    def owner_dirs(self) -> list[Path]:
        found: list[Path] = []
        for c in self.CONTROLLERS:
            base = self._root / c / _GROUP
            if base.is_dir():
                found.extend(p for p in base.iterdir() if p.is_dir())
        return found

    def remove_tree(self, owner_dir: Path) -> None:
        for run_dir in (p for p in owner_dir.iterdir() if p.is_dir()):
            _remove_dir(run_dir, run_dir / "cgroup.procs")
        _remove_dir(owner_dir, owner_dir / "cgroup.procs")


class CgroupV2(Cgroup):
    def __init__(self, path: Path, memory_bytes: int, pids: int) -> None:
        self._path = path
        (path / "memory.max").write_text(str(memory_bytes))
        (path / "memory.swap.max").write_text("0")
        (path / "pids.max").write_text(str(pids))
        self._cpu_us = _Counter(path / "cpu.stat", "usage_usec")
        self._events = _Counter(path / "memory.events", "oom_kill")
        self._pids_max = _Counter(path / "pids.events", "max")

    @property
    def join_files(self) -> tuple[Path, ...]:
        return (self._path / "cgroup.procs",)

    def cpu_s(self) -> float:
        return self._cpu_us.value() / 1e6

    def memory_killed(self) -> bool:
        return self._events.value() > 0

    def pids_exhausted(self) -> bool:
        return self._pids_max.value() > 0

    def peak_memory_bytes(self) -> int:
        peak = self._path / "memory.peak"
        return _read_int(peak) if peak.exists() else 0

    def kill_all(self) -> None:
        (self._path / "cgroup.kill").write_text("1")

    def remove(self) -> None:
        for counter in (self._cpu_us, self._events, self._pids_max):
            counter.close()
        _remove_dir(self._path, self._path / "cgroup.procs")


class CgroupV2Driver(CgroupDriver):
    """A delegated cgroup v2 subtree with the memory and pids controllers."""

    version = "v2"

    def __init__(self, root: Path) -> None:
        self._base = root / _GROUP
        self._owner = self._base / owner_tag()

    @staticmethod
    def available(root: Path) -> bool:
        try:
            controllers = (root / "cgroup.controllers").read_text().split()
        except OSError:
            return False
        return {"memory", "pids"} <= set(controllers) and os.access(root, os.W_OK)

    def _enable_controllers(self, path: Path) -> None:
        (path / "cgroup.subtree_control").write_text("+memory +pids")

    def create(self, memory_bytes: int, pids: int, *, observed: bool = False) -> Cgroup:
        parent = self._owner / _OBSERVED if observed else self._owner
        try:
            if not self._owner.is_dir():
                self._base.mkdir(exist_ok=True)
                self._enable_controllers(self._base.parent)
                self._enable_controllers(self._base)
                self._owner.mkdir()
                self._enable_controllers(self._owner)
            if not parent.is_dir():
                parent.mkdir()
                self._enable_controllers(parent)
            run = parent / _new_run_name()
            run.mkdir()
            return CgroupV2(run, memory_bytes, pids)
        except OSError as exc:
            raise InfrastructureError(f"cannot create cgroup under {parent}: {exc}") from exc

    def owner_dirs(self) -> list[Path]:
        return [p for p in self._base.iterdir() if p.is_dir()] if self._base.is_dir() else []

    def remove_tree(self, owner_dir: Path) -> None:
        """The owner's run groups, those under its observed runs' parent included."""
        for run_dir in (p for p in owner_dir.iterdir() if p.is_dir()):
            if run_dir.name == _OBSERVED:
                self.remove_tree(run_dir)
                continue
            (run_dir / "cgroup.kill").write_text("1")
            _remove_dir(run_dir, run_dir / "cgroup.procs")
        _remove_dir(owner_dir, owner_dir / "cgroup.procs")


class IdentityGroup:
    """A run's group on the cgroup v2 hierarchy, holding no controller: its id is what
    the eBPF observer's probes filter on (the kernel's cgroup id of a task is its v2
    group's, whichever hierarchy holds the limits). On a v1 host it lives on the
    unified hierarchy beside the v1 groups; the launcher joins both."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.id = path.stat().st_ino  # the kernfs node id, as bpf_get_current_cgroup_id

    @property
    def join_file(self) -> Path:
        return self.path / "cgroup.procs"

    def remove(self) -> None:
        _kill_and_remove(self.path)


def _kill_and_remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (path / "cgroup.kill").write_text("1")
    _remove_dir(path, path / "cgroup.procs")


def unified_root(root: Path = CGROUP_ROOT) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (the root, or a hybrid host's unified)."""
    for candidate in (root, root / "unified"):
        if (candidate / "cgroup.procs").exists() and (candidate / "cgroup.controllers").exists():
            return candidate
    return None


def identity_group(root: Path = CGROUP_ROOT) -> IdentityGroup:
    base = unified_root(root)
    if base is None:
        raise InfrastructureError("no cgroup v2 hierarchy: the eBPF observer cannot filter a run")
    try:
        return IdentityGroup(base / _GROUP / _OBSERVED / owner_tag() / _new_run_name())
    except OSError as exc:
        raise InfrastructureError(f"cannot create a cgroup v2 group under {base}: {exc}") from exc


def remove_identity_groups(root: Path = CGROUP_ROOT, *, stale: bool) -> int:
    """Remove this validator's identity groups (`stale`: those of validators that are
    gone instead); returns how many owners' groups were removed."""
    base = unified_root(root)
    observed = base / _GROUP / _OBSERVED if base is not None else None
    if observed is None or not observed.is_dir():
        return 0
    removed = 0
    for owner in [p for p in observed.iterdir() if p.is_dir()]:
        if (not owner_alive(owner.name)) if stale else owner.name == owner_tag():
            for run in [p for p in owner.iterdir() if p.is_dir()]:
                _kill_and_remove(run)
            _remove_dir(owner, owner / "cgroup.procs")
            removed += 1
    return removed


def detect_driver(root: Path = CGROUP_ROOT) -> CgroupDriver:
    """v2 where a writable tree with memory and pids exists, else v1, else abstain."""
    for candidate in (root, root / "unified"):
        if CgroupV2Driver.available(candidate):
            return CgroupV2Driver(candidate)
    if CgroupV1Driver.available(root):
        return CgroupV1Driver(root)
    raise InfrastructureError(
        f"no writable cgroup tree under {root} with cpu accounting, memory and pids"
    )
