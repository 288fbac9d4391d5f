"""What a corpus is, independent of its on-disk format.

A corpus source yields `Task`s: one labelled artifact each. Everything that
crosses this boundary is frozen, so a task drawn for a round cannot change under
the scorer. The artifact digest pins the exact bytes an agent was shown.
"""

from __future__ import annotations

import hashlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import TRACKS, Track
from assay.schema.boundedfs import Entry, TreeLimitError, TreeLimits, walk

# Bounds of any artifact tree the validator walks (digest, snapshot).
ARTIFACT_TREE = TreeLimits(max_depth=64, max_entries=50_000)


@dataclass(frozen=True)
class PackedArchive:
    """A label's `archive`: the file under `artifact/`, and its password when sealed."""

    file: str
    password: str | None = None


class Label(StrEnum):
    MALICIOUS = "malicious"
    SAFE = "safe"


class CorpusError(Exception):
    """A corpus (or one of its tasks) cannot be loaded; the message names the path."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a corpus, tied to the path where it was found."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}".replace("\n", " ")  # one line per problem


def unsafe_path_reason(name: str) -> str | None:
    """Why a relative path taken from a label or an archive could escape its root.

    Returns None for a safe path. Backslashes are refused rather than guessed at:
    an archive made on Windows may mean them as separators (`..\\x`).
    """
    if not name or "\0" in name:
        return "empty path or NUL byte"
    if name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":"):
        return "absolute path or backslash separator"
    if ".." in name.split("/"):
        return "path escapes its root through '..'"
    return None


@dataclass(frozen=True)
class ExpectedFinding:
    """A finding a good agent should report on a behavioural task (DESIGN §4)."""

    category: str
    title: str
    plane: str
    severity: str | None = None
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class PlantedVulnerability:
    """A vulnerability planted in a repository task, located by file and line."""

    file: str
    line: int
    cwe: str
    title: str
    description: str = ""
    all_cwes: tuple[str, ...] = ()  # other weaknesses the curator accepts for this one


@dataclass(frozen=True)
class Task:
    track: Track
    task_id: str
    label: Label
    artifact_dir: Path
    expected_findings: tuple[ExpectedFinding, ...] = ()
    vulnerabilities: tuple[PlantedVulnerability, ...] = ()
    expected_capabilities: tuple[str, ...] = ()
    source: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    notes: str = ""
    # The archive under artifact_dir the artifact is kept packed in (a registry's sdist
    # or a dataset's sealed sample); None when artifact_dir is the tree itself.
    archive: PackedArchive | None = None

    @property
    def malicious(self) -> bool:
        return self.label is Label.MALICIOUS

    def expected_items(self) -> tuple[FindingItem, ...]:
        """The expected findings as `mechanism.matching` reads them."""
        return tuple(FindingItem.of(asdict(f)) for f in self.expected_findings)

    def planted_items(self) -> tuple[VulnerabilityItem, ...]:
        """The planted vulnerabilities as `mechanism.matching` reads them."""
        return tuple(VulnerabilityItem.of(asdict(v)) for v in self.vulnerabilities)

    def artifact_digest(self) -> str:
        return artifact_digest(self.artifact_dir)


def artifact_digest(root: Path) -> str:
    """sha256 over the artifact tree, independent of file system order and metadata.

    Entries are taken in order of their POSIX relative path (sorted by UTF-8
    bytes). A regular file feeds: the path's UTF-8 bytes, a NUL byte, its size as
    8 big-endian bytes, then its bytes. A symlink feeds: the path, a 0x01 byte and
    the link text (it is never followed). Directories contribute only through
    their entries. Special files (devices, fifos, sockets), trees past
    `ARTIFACT_TREE` and names that are not UTF-8 are refused with `CorpusError`.
    """
    digest = hashlib.sha256()
    try:
        entries = sorted(
            ((e.relative.as_posix().encode("utf-8"), e) for e in walk(root, ARTIFACT_TREE)),
            key=lambda item: item[0],
        )
        for rel, entry in entries:
            if entry.is_symlink:
                digest.update(rel + b"\1" + os.readlink(entry.path).encode("utf-8"))
            elif entry.is_file:
                digest.update(rel + b"\0" + entry.size.to_bytes(8, "big"))
                _feed(digest, entry)
            elif not entry.is_dir:
                raise CorpusError(f"{entry.path}: special files cannot be part of an artifact")
    except (TreeLimitError, OSError, UnicodeEncodeError) as exc:
        raise CorpusError(f"{root}: {exc}") from exc
    return digest.hexdigest()


def corpus_digest(tasks: Iterable[Task]) -> str:
    """sha256 naming a corpus's tasks exactly: per task, in (track, task id) order, one
    line of compact, key-sorted JSON ``[track, task_id, label, artifact_digest,
    expected_findings, vulnerabilities]`` (the last two as their fields). Two validators
    with the same tasks, truth and artifact bytes get the same digest, and so, in chain
    mode, the same round seed."""
    digest = hashlib.sha256()
    for task in sorted(tasks, key=lambda t: (t.track.value, t.task_id)):
        entry = [
            task.track.value,
            task.task_id,
            task.label.value,
            task.artifact_digest(),
            [asdict(f) for f in task.expected_findings],
            [asdict(v) for v in task.vulnerabilities],
        ]
        line = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        digest.update(line.encode("ascii") + b"\n")
    return digest.hexdigest()


def _feed(digest: Any, entry: Entry) -> None:
    """The file's bytes in chunks, exactly as many as its size said (a file that grows
    or shrinks while being read changes the digest rather than the memory use)."""
    fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        left = entry.size
        while left > 0 and (chunk := handle.read(min(left, 1 << 20))):
            digest.update(chunk)
            left -= len(chunk)


class CorpusSource(ABC):
    """A labelled corpus in some on-disk format."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the tasks come from, as a round's plan records it."""

    @abstractmethod
    def tasks(self, track: Track) -> tuple[Task, ...]:
        """All tasks of one track, ordered by task id; raises `CorpusError`."""

    def all_tasks(self) -> dict[Track, tuple[Task, ...]]:
        return {track: self.tasks(track) for track in TRACKS}
