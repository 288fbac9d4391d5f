"""Import a PyPI malware registry laid out one folder per package and version:

    <name>/<version>/<file>.tar.gz        (or .zip: the sdist as it was uploaded)

Each sdist is stored sealed in an encrypted zip (the datasets' documented password),
so the corpus holds nothing runnable at rest; the import test-unpacks each one with
the safe extractors before it is accepted. `only` picks packages by name.
"""

from __future__ import annotations

from pathlib import Path

from assay.corpus.importing import PackedTask, dataset_commit, task_id, write_tasks
from assay.corpus.interface import ARTIFACT_TREE, Label
from assay.corpus.osv import normalised_name
from assay.corpus.packed import is_package_archive
from assay.corpus.phylax import ImportSummary
from assay.schema.boundedfs import walk

DATASET = "lxyeternal/pypi_malregistry"


def import_malregistry(
    src: Path,
    dest: Path,
    *,
    only: frozenset[str] | None = None,
    exclude: frozenset[str] = frozenset(),
    commit: str = "",
) -> ImportSummary:
    """The sdists under `src` (every package, or those named in `only`) whose name is
    not in `exclude`, written into the corpus `dest` as sealed malicious tasks."""
    commit = commit or dataset_commit(src)
    wanted = None if only is None else {normalised_name("pypi", n) for n in only}
    left_out = {normalised_name("pypi", n) for n in exclude}
    tasks = []
    for entry in walk(src, ARTIFACT_TREE):
        parts = entry.relative.parts
        if not entry.is_file or len(parts) != 3 or not is_package_archive(parts[2]):
            continue
        name, version = parts[0], parts[1]
        key = normalised_name("pypi", name)
        if key in left_out or (wanted is not None and key not in wanted):
            continue
        tasks.append(
            PackedTask(
                task_id=task_id("pypi", name, version),
                label=Label.MALICIOUS,
                archive=entry.path,
                seal=True,
                source={
                    "dataset": DATASET,
                    "commit": commit,
                    "path": entry.relative.as_posix(),
                    "ecosystem": "pypi",
                    "package": name,
                    "version": version,
                },
                notes=f"malicious PyPI upload {name} {version}",
            )
        )
    return write_tasks(dest, tasks)
