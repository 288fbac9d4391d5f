"""Import DataDog's malicious-software-packages-dataset layout as malicious package tasks.

Layout (npm and PyPI; other ecosystems and folders are not read):

    samples/<npm|pypi>/<malicious_intent|compromised_lib>/<name>/<version>/<sample>.zip
    samples/<npm|pypi>/<sample>.zip        older flat samples: <date>-<name>-v<version>.zip

Every sample is a zip encrypted with the dataset's documented password. It is copied
as it is (the task stays sealed at rest) and test-unpacked once with the safe
extractors before the import is accepted; nothing of it is run on the host.
"""

from __future__ import annotations

import re
from pathlib import Path

from assay.corpus.importing import PackedTask, dataset_commit, task_id, write_tasks
from assay.corpus.interface import ARTIFACT_TREE, Label
from assay.corpus.packed import DATASET_PASSWORD
from assay.corpus.phylax import ImportSummary
from assay.schema.boundedfs import walk

DATASET = "DataDog/malicious-software-packages-dataset"
ECOSYSTEMS = ("pypi", "npm")
CATEGORIES = ("malicious_intent", "compromised_lib")
# <date>-<name>-v<version>.zip, or the older <date>:<name>:<version>.zip
_FLAT = re.compile(r"\d{4}-\d{2}-\d{2}[-:](?P<name>.+?)(?:-v|:)(?P<version>[^:]+)\.zip")


def import_datadog(
    src: Path, dest: Path, *, exclude: frozenset[str] = frozenset(), commit: str = ""
) -> ImportSummary:
    """Every npm and PyPI sample under `src` (the dataset's root or its samples/ folder)
    whose package name is not in `exclude`, written into the corpus `dest`."""
    samples = src / "samples" if (src / "samples").is_dir() else src
    commit = commit or dataset_commit(src)
    tasks = [
        task
        for ecosystem in ECOSYSTEMS
        if (samples / ecosystem).is_dir()
        for task in _samples(src, samples / ecosystem, ecosystem, commit)
        if task.source["package"].lower() not in {e.lower() for e in exclude}
    ]
    return write_tasks(dest, tasks)


def _samples(src: Path, root: Path, ecosystem: str, commit: str) -> list[PackedTask]:
    found = []
    for entry in walk(root, ARTIFACT_TREE):
        if not entry.is_file or entry.path.suffix != ".zip":
            continue
        parts = entry.relative.parts
        category = parts[0] if parts[0] in CATEGORIES else ""
        described = _described(parts[1:] if category else parts)
        if described is None:
            continue
        name, version = described
        found.append(
            PackedTask(
                task_id=task_id(ecosystem, name, version),
                label=Label.MALICIOUS,
                archive=entry.path,
                password=DATASET_PASSWORD,
                source={
                    "dataset": DATASET,
                    "commit": commit,
                    "path": entry.path.relative_to(src).as_posix(),
                    "ecosystem": ecosystem,
                    "category": category or "unsorted",
                    "package": name,
                    "version": version,
                },
                notes=f"{ecosystem} sample {name} {version} ({category or 'unsorted'})",
            )
        )
    return found


def _described(parts: tuple[str, ...]) -> tuple[str, str] | None:
    """(name, version) from <name>/<version>/<file>.zip, or from a flat sample's file name."""
    if len(parts) == 3:
        return parts[0], parts[1]
    flat = _FLAT.fullmatch(parts[-1]) if len(parts) == 1 else None
    return (flat["name"], flat["version"]) if flat else None
