"""Import OpenSSF malicious-packages records (OSV `MAL-*.json`) joined with artifacts.

The records name malicious packages and versions but carry no code; a user supplies
the artifacts (a folder of sdists and npm tarballs). Each artifact is unpacked once
with the safe extractors to read the name and version it declares (PKG-INFO or
package.json), joined with the record that names it, and stored sealed in an
encrypted zip, so the corpus keeps no malware in the clear. An artifact no record
names is refused: a label needs its evidence.
"""

from __future__ import annotations

import email.parser
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.corpus.importing import (
    ImportFailed,
    PackedTask,
    dataset_commit,
    task_id,
    write_tasks,
)
from assay.corpus.interface import ARTIFACT_TREE, CorpusError, Label, PackedArchive, Problem
from assay.corpus.packed import is_package_archive, materialised
from assay.corpus.phylax import ImportSummary
from assay.schema.boundedfs import TreeLimitError, read_capped, regular_file, walk
from assay.schema.boundedjson import JsonLimitError, parse_bounded

DATASET = "ossf/malicious-packages"
MAX_RECORD_BYTES = 1 << 20
MAX_METADATA_BYTES = 1 << 20
_ECOSYSTEMS = {"pypi": "pypi", "npm": "npm"}


@dataclass(frozen=True)
class _Record:
    record_id: str
    path: str
    ecosystem: str
    name: str
    versions: frozenset[str]  # empty: every version
    summary: str


def normalised_name(ecosystem: str, name: str) -> str:
    """PyPI names compare as PEP 503 normalises them; npm names as written."""
    return re.sub(r"[-_.]+", "-", name).lower() if ecosystem == "pypi" else name


def import_osv(
    src: Path, artifacts: Path, dest: Path, *, commit: str = "", origin: str = ""
) -> ImportSummary:
    """The artifacts under `artifacts` that a `MAL-*` record under `src` names, written
    into the corpus `dest` as malicious tasks. `origin` says where the artifacts came
    from (a sample collection and its commit); each label records it beside the
    artifact's path under `artifacts`, since the record itself carries no code."""
    commit = commit or dataset_commit(src)
    problems: list[Problem] = []
    records = list(_records(src, problems))
    tasks = []
    for archive in _archives(artifacts):
        declared = _declared(archive, problems)
        if declared is None:
            continue
        ecosystem, name, version = declared
        record = _match(records, ecosystem, name, version)
        if record is None:
            problems.append(Problem(archive, f"no MAL record names {ecosystem} {name} {version}"))
            continue
        where = {"artifact_file": archive.relative_to(artifacts).as_posix()}
        if origin:
            where["artifact_origin"] = origin
        tasks.append(_task(record, archive, name, version, commit, where))
    if problems:
        raise ImportFailed(problems)
    return write_tasks(dest, tasks)


def _task(
    record: _Record, archive: Path, name: str, version: str, commit: str, where: dict[str, str]
) -> PackedTask:
    return PackedTask(
        task_id=task_id(record.ecosystem, name, version),
        label=Label.MALICIOUS,
        archive=archive,
        seal=True,
        source={
            "dataset": DATASET,
            "commit": commit,
            "path": record.path,
            "record": record.record_id,
            "ecosystem": record.ecosystem,
            "package": name,
            "version": version,
            "summary": record.summary,
            **where,
        },
        notes=f"{record.record_id}: {record.summary}"[:500],
    )


def _records(src: Path, problems: list[Problem]) -> Iterator[_Record]:
    for entry in walk(src, ARTIFACT_TREE):
        if not (entry.is_file and entry.path.name.startswith("MAL-")):
            continue
        if entry.path.suffix != ".json":
            continue
        try:
            data = parse_bounded(
                read_capped(entry.path, MAX_RECORD_BYTES + 1), max_bytes=MAX_RECORD_BYTES
            )
        except (TreeLimitError, JsonLimitError) as exc:
            problems.append(Problem(entry.path, f"not a valid OSV record: {exc}"))
            continue
        yield from _affected(data, entry.relative.as_posix())


def _affected(data: object, path: str) -> Iterator[_Record]:
    if not isinstance(data, dict):
        return
    for affected in data.get("affected") or []:
        package = affected.get("package") if isinstance(affected, dict) else None
        if not isinstance(package, dict):
            continue
        ecosystem = _ECOSYSTEMS.get(str(package.get("ecosystem", "")).lower())
        name = package.get("name")
        if ecosystem is None or not isinstance(name, str):
            continue
        versions = affected.get("versions") or []
        yield _Record(
            record_id=str(data.get("id", "")),
            path=path,
            ecosystem=ecosystem,
            name=normalised_name(ecosystem, name),
            versions=frozenset(v for v in versions if isinstance(v, str)),
            summary=str(data.get("summary") or data.get("details") or "")[:300],
        )


def _match(records: list[_Record], ecosystem: str, name: str, version: str) -> _Record | None:
    key = normalised_name(ecosystem, name)
    for record in records:
        named = record.ecosystem == ecosystem and record.name == key
        if named and (not record.versions or version in record.versions):
            return record
    return None


def _archives(root: Path) -> Iterator[Path]:
    for entry in walk(root, ARTIFACT_TREE):
        if entry.is_file and is_package_archive(entry.path.name):
            yield entry.path


def _declared(archive: Path, problems: list[Problem]) -> tuple[str, str, str] | None:
    """(ecosystem, name, version) the unpacked archive declares about itself."""
    try:
        with (
            tempfile.TemporaryDirectory(prefix=".osv-") as tmp,
            materialised(archive.parent, PackedArchive(archive.name), Path(tmp)) as tree,
        ):
            found = _package_json(tree) or _pkg_info(tree)
    except CorpusError as exc:
        problems.append(Problem(archive, str(exc)))
        return None
    if found is None:
        problems.append(Problem(archive, "declares no name and version (PKG-INFO, package.json)"))
    return found


def _package_json(tree: Path) -> tuple[str, str, str] | None:
    path = regular_file(tree, "package.json")
    if path is None:
        return None
    try:
        raw = read_capped(path, MAX_METADATA_BYTES)
        data: Any = parse_bounded(raw, max_bytes=MAX_METADATA_BYTES)
    except (TreeLimitError, JsonLimitError):
        return None
    if isinstance(data, dict) and isinstance(data.get("name"), str):
        return "npm", data["name"], str(data.get("version", ""))
    return None


def _pkg_info(tree: Path) -> tuple[str, str, str] | None:
    path = regular_file(tree, "PKG-INFO")
    if path is None:
        return None
    try:
        text = read_capped(path, MAX_METADATA_BYTES).decode("utf-8", "replace")
    except TreeLimitError:
        return None
    headers = email.parser.HeaderParser().parsestr(text)
    name, version = headers.get("Name"), headers.get("Version")
    return ("pypi", str(name), str(version)) if name and version else None
