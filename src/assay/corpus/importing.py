"""Writing packed tasks into a native corpus: what the dataset importers share.

An importer gathers `PackedTask`s (one archive each, with the label's provenance);
`write_tasks` builds every task in a staging directory beside DEST, checks each as
`assay corpus validate` would (the label reads back, the archive unpacks with the
safe extractors), and moves the tasks into DEST only when all of them passed: an
import is all-or-nothing (or, for a curator's batch of fetched packages, keeps every
task that passed and names the rest), a task id already in DEST is refused, never
replaced, and so is a second task of a track given the same archive bytes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.corpus.interface import CorpusError, Label, Problem
from assay.corpus.native import ARTIFACT_DIR, LABEL_FILE, read_task
from assay.corpus.packed import DATASET_PASSWORD, file_sha256, materialised, seal
from assay.corpus.phylax import ImportSummary
from assay.mechanism.spec import Track

_UNSAFE_ID = re.compile(r"[^a-z0-9._-]+")
MAX_ID = 120


class ImportFailed(Exception):
    """Nothing was written to DEST; lists every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class PackedTask:
    """One task to write: `archive` is stored under artifact/ (sealed into an encrypted
    zip first when `seal` is set, so a malware sample is never kept in the clear)."""

    task_id: str
    label: Label
    archive: Path
    source: dict[str, Any]
    notes: str
    password: str | None = None  # the archive is already sealed with this password
    seal: bool = False
    track: Track = Track.PACKAGES


def task_id(*parts: str) -> str:
    """A task id from an ecosystem, a package name and a version: lower case, no
    separators a path could misread, short enough for any file system. It never names
    the dataset or the label: a task id is seen by whoever reads a round."""
    joined = "-".join(_UNSAFE_ID.sub("-", p.lower()).strip("-._") for p in parts if p)
    return joined[:MAX_ID].strip("-._") or "task"


def dataset_commit(src: Path) -> str:
    """The commit a dataset checkout is at, or "" when it is not a git work tree."""
    try:
        done = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    head = done.stdout.strip()
    return head if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", head) else ""


def write_tasks(dest: Path, tasks: list[PackedTask], *, keep_going: bool = False) -> ImportSummary:
    """Write `tasks` into the corpus at `dest` (created when missing).

    All or nothing by default. With `keep_going` a task that is refused (its id taken,
    its archive another task's, or it does not stage) is left out and named in the
    summary's `refused`, and every other task is written."""
    if dest.exists() and not dest.is_dir():
        raise ImportFailed([Problem(dest, "destination exists and is not a directory")])
    refused = _duplicates(dest, tasks)
    if refused and not keep_going:
        raise ImportFailed([p for found in refused.values() for p in found])
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".corpus-import-", dir=dest.parent))
    try:
        for n, task in enumerate(tasks):
            if n not in refused and (problems := _stage(staging, task)):
                refused[n] = problems
        if refused and not keep_going:
            raise ImportFailed([p for _, found in sorted(refused.items()) for p in found])
        counts: dict[Track, int] = {}
        for n, task in enumerate(tasks):
            if n in refused:
                continue
            target = dest / task.track.value / task.task_id
            target.parent.mkdir(parents=True, exist_ok=True)
            (staging / task.track.value / task.task_id).rename(target)
            counts[task.track] = counts.get(task.track, 0) + 1
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    left_out = tuple(p for _, found in sorted(refused.items()) for p in found)
    return ImportSummary(dest, counts, left_out)


def _duplicates(dest: Path, tasks: list[PackedTask]) -> dict[int, list[Problem]]:
    """Task ids taken, and archives given for two tasks of a track (by the index of the
    task refused): one artifact is one task (as the Phylax import holds), or it would be
    drawn and scored twice."""
    seen: set[tuple[Track, str]] = set()
    owners: dict[tuple[Track, str], PackedTask] = {}
    problems: dict[int, list[Problem]] = {}
    for n, task in enumerate(tasks):
        key = (task.track, task.task_id)
        where = dest / task.track.value / task.task_id
        if key in seen or where.exists():
            problems.setdefault(n, []).append(Problem(where, "task id taken"))
        seen.add(key)
        try:
            digest = file_sha256(task.archive)
        except OSError:
            continue  # staging it names the problem
        owner = owners.setdefault((task.track, digest), task)
        if owner is not task:
            name = task.archive.name
            taken = f"{name} is the archive of {owner.task_id}; one artifact is one task"
            problems.setdefault(n, []).append(Problem(where, taken))
    return problems


def _stage(staging: Path, task: PackedTask) -> list[Problem]:
    task_dir = staging / task.track.value / task.task_id
    artifact = task_dir / ARTIFACT_DIR
    artifact.mkdir(parents=True)
    password = task.password
    source = dict(task.source)
    if task.seal:
        source["package_sha256"] = file_sha256(task.archive)
        stored = artifact / f"{task.archive.name}.zip"
        seal(task.archive, stored)
        password = DATASET_PASSWORD
    else:
        stored = artifact / task.archive.name
        shutil.copyfile(task.archive, stored)
    archive: dict[str, Any] = {"file": stored.name}
    if password is not None:
        archive["password"] = password
    label: dict[str, Any] = {
        "track": task.track.value,
        "label": task.label.value,
        "expected_findings": [],
        "expected_capabilities": [],
        "archive": archive,
        "source": {**source, "archive_sha256": file_sha256(stored), "synthetic": False},
        "notes": task.notes,
    }
    (task_dir / LABEL_FILE).write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    read, problems = read_task(task_dir, task.track)
    if read is None or read.archive is None:
        return problems
    try:
        with materialised(read.artifact_dir, read.archive, workdir=staging):
            return []
    except CorpusError as exc:
        return [Problem(task.archive, f"{task.task_id}: {exc}")]
