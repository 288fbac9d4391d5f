"""What is checked is what runs: each planned task's artifact, copied once into a
validator-owned read-only tree when the round is planned.

The round verifies, detonates and mounts only this copy, so an artifact replaced
in the corpus after planning changes nothing the round does. The copy is taken
by a bounded walk (no symlink followed, depth, entry and byte caps) and its
digest is computed over the copy itself, never over the source.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

from assay.corpus.interface import ARTIFACT_TREE, CorpusError, artifact_digest
from assay.schema.boundedfs import TreeLimitError, walk

MAX_ARTIFACT_BYTES = 256 << 20
_CHUNK = 1 << 20


def snapshot_root(db: Path, round_id: str) -> Path:
    """Where a round's snapshots live: beside its store, one directory per round."""
    return db.resolve().parent / f"{db.name}.artifacts" / round_id


def snapshot_artifact(
    source: Path, dest: Path, prepare: Callable[[Path], None] | None = None
) -> str:
    """Copy `source` to the new directory `dest`, make it read-only, return its digest.
    `prepare` changes the copy before it is sealed and digested (the round's variant).

    Raises `CorpusError` (naming the artifact) for trees past the caps, special files
    or files that change size while being copied; `dest` is then removed.
    """
    try:
        dest.mkdir(parents=True)
        _copy(source, dest)
        if prepare is not None:
            prepare(dest)
        _seal(dest)
        return artifact_digest(dest)
    except (TreeLimitError, OSError, CorpusError) as exc:
        _remove(dest)
        raise CorpusError(f"{source}: cannot snapshot the artifact: {exc}") from exc


def _copy(source: Path, dest: Path) -> None:
    total = 0
    for entry in walk(source, ARTIFACT_TREE):
        target = dest / entry.relative
        if entry.is_dir:
            target.mkdir()
        elif entry.is_symlink:
            target.symlink_to(os.readlink(entry.path))
        elif entry.is_file:
            total += entry.size
            if total > MAX_ARTIFACT_BYTES:
                raise TreeLimitError(f"larger than {MAX_ARTIFACT_BYTES} bytes")
            _copy_file(entry.path, target, entry.size)
        else:
            raise TreeLimitError(f"{entry.relative}: special files cannot be part of an artifact")


def _copy_file(source: Path, target: Path, size: int) -> None:
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as src, target.open("xb") as out:
        left = size
        while left > 0 and (chunk := src.read(min(left, _CHUNK))):
            out.write(chunk)
            left -= len(chunk)
        if left or src.read(1):
            raise TreeLimitError(f"{target.name}: changed size while being copied")


def _seal(root: Path) -> None:
    """Read-only for everyone, the root last (directories bottom-up)."""
    for entry in reversed(list(walk(root, ARTIFACT_TREE))):
        if not entry.is_symlink:
            entry.path.chmod(0o555 if entry.is_dir else 0o444)
    root.chmod(0o555)


def _remove(root: Path) -> None:
    """Remove a (possibly sealed) snapshot."""
    if not root.exists():
        return
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(stat.S_IRWXU)
    root.chmod(stat.S_IRWXU)
    shutil.rmtree(root, ignore_errors=True)


def prune_snapshots(db: Path, finished: Callable[[str], bool]) -> list[str]:
    """Remove the snapshots of rounds that no longer need them (`finished(round_id)`:
    completed, so never resumed); returns the round ids pruned."""
    base = snapshot_root(db, "_").parent
    pruned: list[str] = []
    for round_dir in sorted(base.iterdir()) if base.is_dir() else ():
        if round_dir.is_dir() and not round_dir.is_symlink() and finished(round_dir.name):
            for task_snapshot in sorted(
                p for track in round_dir.iterdir() for p in track.iterdir()
            ):
                _remove(task_snapshot)
            shutil.rmtree(round_dir, ignore_errors=True)
            pruned.append(round_dir.name)
    return pruned
