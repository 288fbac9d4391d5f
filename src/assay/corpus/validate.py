"""`assay corpus validate`: every problem of a native corpus, each with its path.

Nothing is skipped silently: a directory that is not a task, a task whose label
cannot be read, or a track whose classes are out of balance is a problem, and
validation goes on to find the rest. A top-level folder that is not named after a
track (a README's images, a build script's folder) is no part of the corpus: it is
ignored, and the report lists it as ignored.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from assay.corpus.interface import (
    ARTIFACT_TREE,
    CorpusError,
    Label,
    Problem,
    Task,
    unsafe_path_reason,
)
from assay.corpus.native import ARTIFACT_DIR, read_task
from assay.corpus.packed import materialised
from assay.corpus.phylax import UnsafeArchive, ZipLimits, check_central_directory
from assay.mechanism.spec import Track
from assay.schema.boundedfs import TreeLimitError, walk

# DESIGN §9: a track's malicious share must stay within 30..70 %.
MIN_CLASS_SHARE = 0.30


@dataclass(frozen=True)
class TrackCounts:
    malicious: int
    safe: int

    @property
    def total(self) -> int:
        return self.malicious + self.safe


@dataclass(frozen=True)
class ValidationReport:
    root: Path
    problems: tuple[Problem, ...]
    counts: Mapping[Track, TrackCounts]
    ignored: tuple[Path, ...] = ()  # top-level folders that are not track folders

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_corpus(root: Path) -> ValidationReport:
    if not root.is_dir():
        return ValidationReport(root, (Problem(root, "corpus directory does not exist"),), {})
    problems: list[Problem] = []
    counts: dict[Track, TrackCounts] = {}
    ignored: list[Path] = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            continue  # README and similar notes beside the tracks are not tasks
        if entry.name not in {t.value for t in Track}:
            ignored.append(entry)
            continue
        track = Track(entry.name)
        tasks = _validate_track(entry, track, problems)
        counts[track] = TrackCounts(
            malicious=sum(t.label is Label.MALICIOUS for t in tasks),
            safe=sum(t.label is Label.SAFE for t in tasks),
        )
        problems.extend(_balance_problems(entry, counts[track]))
    if not counts:
        problems.append(Problem(root, "no track directories (skills, mcp_servers, ...) found"))
    return ValidationReport(root, tuple(problems), counts, tuple(ignored))


def _validate_track(track_dir: Path, track: Track, problems: list[Problem]) -> list[Task]:
    tasks: list[Task] = []
    for task_dir in sorted(track_dir.iterdir()):
        if task_dir.is_symlink() or not task_dir.is_dir():
            problems.append(Problem(task_dir, "not a task directory (expected <task-id>/)"))
            continue
        problems.extend(_tree_problems(task_dir))
        task, found = read_task(task_dir, track)
        problems.extend(found)
        if task is not None:
            problems.extend(_archive_problems(task))
            tasks.append(task)
    return tasks


def _archive_problems(task: Task) -> list[Problem]:
    """A packed artifact must unpack with the safe extractors, as a round will unpack it
    (into a temporary directory, removed at once: nothing of it runs)."""
    if task.archive is None:
        return []
    try:
        with materialised(task.artifact_dir, task.archive):
            return []
    except CorpusError as exc:
        return [Problem(task.artifact_dir / task.archive.file, str(exc))]


def _balance_problems(track_dir: Path, counts: TrackCounts) -> list[Problem]:
    if counts.total == 0:
        return [Problem(track_dir, "track has no valid tasks")]
    if counts.malicious == 0 or counts.safe == 0:
        return [
            Problem(
                track_dir, f"single-class track ({counts.malicious} malicious, {counts.safe} safe)"
            )
        ]
    share = counts.malicious / counts.total
    if not MIN_CLASS_SHARE <= share <= 1 - MIN_CLASS_SHARE:
        return [
            Problem(
                track_dir,
                f"split {counts.malicious}/{counts.safe} is past 70/30 ({share:.0%} malicious)",
            )
        ]
    return []


def _tree_problems(task_dir: Path) -> list[Problem]:
    """Links leaving the task, special files, archives with escaping member names, and
    trees too deep or too large to walk."""
    problems: list[Problem] = []
    task_root = Path(os.path.realpath(task_dir))
    artifact = task_dir / ARTIFACT_DIR
    try:
        for entry in walk(artifact, ARTIFACT_TREE) if artifact.is_dir() else ():
            if entry.is_symlink:
                # realpath, not resolve(): a link loop is reported, never raised.
                if not Path(os.path.realpath(entry.path)).is_relative_to(task_root):
                    link = os.readlink(entry.path)
                    problems.append(Problem(entry.path, f"symlink leaves the task: -> {link}"))
            elif not (entry.is_file or entry.is_dir):
                problems.append(Problem(entry.path, "special file (device, socket or fifo)"))
            elif entry.path.suffix == ".zip":
                problems.extend(_zip_member_problems(entry.path))
    except TreeLimitError as exc:
        problems.append(Problem(artifact, f"artifact tree refused: {exc}"))
    return problems


def _zip_member_problems(path: Path) -> list[Problem]:
    try:
        check_central_directory(path, ZipLimits())
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except UnsafeArchive as exc:
        return [Problem(path, f"zip archive refused: {exc}")]
    except (zipfile.BadZipFile, OSError, ValueError, RuntimeError) as exc:
        return [Problem(path, f"unreadable zip archive: {exc}")]
    return [
        Problem(path, f"zip member {name!r}: {reason}")
        for name in names
        if (reason := unsafe_path_reason(name.rstrip("/")))
    ]


PROBLEMS_SHOWN = 5


def require_valid(root: Path, tracks: tuple[Track, ...]) -> None:
    """Refuse (CorpusError) a corpus with any problem on the tracks a command will use.

    The same checks as `assay corpus validate`, run before anything is planned or
    stored, so a round never starts on a directory that is not a corpus.
    """
    report = validate_corpus(root)
    wanted = {root / t.value for t in tracks}
    relevant = [p for p in report.problems if not _under_other_track(p.path, root, wanted)]
    relevant += [
        Problem(root / t.value, f"the corpus has no {t.value} tasks")
        for t in tracks
        if t not in report.counts and report.counts
    ]
    if relevant:
        shown = "; ".join(str(p) for p in relevant[:PROBLEMS_SHOWN])
        more = len(relevant) - PROBLEMS_SHOWN
        tail = f" (and {more} more)" if more > 0 else ""
        raise CorpusError(
            f"{root} is not a usable corpus: {shown}{tail}; `assay corpus validate {root}` "
            "lists every problem"
        )


def _under_other_track(path: Path, root: Path, wanted: set[Path]) -> bool:
    try:
        top = root / path.relative_to(root).parts[0]
    except (ValueError, IndexError):
        return False  # the root itself: a problem for every track
    return top.name in {t.value for t in Track} and top not in wanted
