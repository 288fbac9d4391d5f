"""Import the Phylax corpus-data layout into the native layout (DESIGN §9).

Phylax layout, per track:

    <track>/<track>.csv                        columns ref,label,artifact_file,...
    <track>/artifacts/<ref>.zip                the artifact
    <track>/artifacts/<ref>.expected_findings.json   behavioural tracks (beside the zip)
    <track>/artifacts/<ref>.ground_truth.json        repositories (beside the zip)

Archives are hostile input. Extraction refuses path escapes, absolute paths,
links and special files, duplicate names, too many entries, and zip bombs by
both the sizes they declare and the bytes they actually inflate to. The import
is all-or-nothing: it is built in a staging directory beside DEST and renamed
into place only when every task converted cleanly.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.corpus.interface import Problem, unsafe_path_reason
from assay.corpus.native import ARTIFACT_DIR, LABEL_FILE, read_task
from assay.mechanism.spec import TRACKS, Track

_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_CHUNK = 1 << 16


@dataclass(frozen=True)
class ZipLimits:
    max_files: int = 2_000
    max_total_bytes: int = 64 << 20
    # A higher inflation ratio than this on a sizeable member is a bomb, not source code.
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 1 << 20


@dataclass(frozen=True)
class ImportSummary:
    dest: Path
    tasks: dict[Track, int]


class PhylaxImportError(Exception):
    """The import failed; nothing was written to DEST. Lists every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in problems))


class UnsafeArchive(Exception):
    """An archive was refused; the message says which member and why."""


def safe_extract(archive_path: Path, dest: Path, limits: ZipLimits = ZipLimits()) -> int:
    """Extract `archive_path` into the empty directory `dest`; returns the file count."""
    try:
        with zipfile.ZipFile(archive_path) as archive:
            infos = archive.infolist()
            _check_declared(infos, limits)
            written = 0
            for info in infos:
                written += _extract_member(archive, info, dest, limits, written)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise UnsafeArchive(f"corrupt or unsupported zip: {exc}") from exc
    return sum(1 for info in infos if not info.is_dir())


def _check_declared(infos: list[zipfile.ZipInfo], limits: ZipLimits) -> None:
    if len(infos) > limits.max_files:
        raise UnsafeArchive(f"{len(infos)} entries exceed the cap of {limits.max_files}")
    declared = sum(info.file_size for info in infos)
    if declared > limits.max_total_bytes:
        raise UnsafeArchive(
            f"zip bomb refused: declares {declared} bytes uncompressed, "
            f"cap is {limits.max_total_bytes}"
        )
    seen: set[str] = set()
    for info in infos:
        name = info.filename.rstrip("/")
        reason = unsafe_path_reason(name)
        if reason:
            raise UnsafeArchive(f"member {info.filename!r}: {reason}")
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind == stat.S_IFLNK:
            raise UnsafeArchive(f"member {info.filename!r}: symlinks are not allowed")
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise UnsafeArchive(f"member {info.filename!r}: special files are not allowed")
        if name in seen:
            raise UnsafeArchive(f"member {info.filename!r} appears twice")
        seen.add(name)
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.ratio_floor_bytes and ratio > limits.max_ratio:
            raise UnsafeArchive(f"zip bomb refused: member {info.filename!r} inflates {ratio:.0f}x")


def _extract_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, limits: ZipLimits, so_far: int
) -> int:
    """Stream one member out, counting real bytes; returns the bytes written."""
    target = dest / info.filename.rstrip("/")
    if not target.resolve().is_relative_to(dest.resolve()):
        raise UnsafeArchive(f"member {info.filename!r} resolves outside the destination")
    if info.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with archive.open(info) as src, target.open("xb") as out:
        while chunk := src.read(_CHUNK):
            written += len(chunk)
            if written > info.file_size or so_far + written > limits.max_total_bytes:
                raise UnsafeArchive(
                    f"zip bomb refused: member {info.filename!r} inflates past its "
                    f"declared {info.file_size} bytes or the {limits.max_total_bytes}-byte cap"
                )
            out.write(chunk)
    return written


def import_phylax(src: Path, dest: Path, limits: ZipLimits = ZipLimits()) -> ImportSummary:
    """Convert a Phylax corpus at `src` into a native corpus at `dest` (new or empty)."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise PhylaxImportError([Problem(dest, "destination exists and is not empty")])
    tracks = [t for t in TRACKS if (src / t.value / f"{t.value}.csv").is_file()]
    if not tracks:
        raise PhylaxImportError([Problem(src, "no <track>/<track>.csv found for any track")])
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".phylax-import-", dir=dest.parent))
    try:
        problems: list[Problem] = []
        counts = {
            t: _import_track(src / t.value, staging / t.value, t, limits, problems) for t in tracks
        }
        if problems:
            raise PhylaxImportError(problems)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ImportSummary(dest, counts)


def _import_track(
    track_dir: Path, out_dir: Path, track: Track, limits: ZipLimits, problems: list[Problem]
) -> int:
    csv_path = track_dir / f"{track.value}.csv"
    with csv_path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = {"ref", "label", "artifact_file"} - set(reader.fieldnames or [])
        if missing:
            problems.append(Problem(csv_path, f"missing columns {sorted(missing)}"))
            return 0
        rows = list(reader)
    imported = 0
    for number, row in enumerate(rows, start=2):  # line 1 is the header
        where = f"{csv_path.name} line {number}"
        found = _import_row(row, track_dir, out_dir, track, limits)
        problems.extend(Problem(p.path, f"{p.message} ({where})") for p in found)
        imported += not found
    return imported


def _import_row(
    row: dict[str, Any], track_dir: Path, out_dir: Path, track: Track, limits: ZipLimits
) -> list[Problem]:
    ref = (row.get("ref") or "").strip()
    if not _REF.fullmatch(ref):
        return [Problem(track_dir, f"ref {ref!r} is not a usable task id")]
    zip_path, error = _locate_archive(track_dir, (row.get("artifact_file") or "").strip())
    if zip_path is None:
        return [Problem(track_dir, f"{ref}: {error}")]
    task_dir = out_dir / ref
    if task_dir.exists():
        return [Problem(zip_path, f"{ref}: duplicate ref")]
    (task_dir / ARTIFACT_DIR).mkdir(parents=True)
    try:
        safe_extract(zip_path, task_dir / ARTIFACT_DIR, limits)
    except UnsafeArchive as exc:
        return [Problem(zip_path, f"{ref}: archive refused: {exc}")]
    except OSError as exc:
        return [Problem(zip_path, f"{ref}: cannot extract: {exc}")]
    label, problems = _native_label(row, ref, zip_path, track)
    if problems:
        return problems
    (task_dir / LABEL_FILE).write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    return read_task(task_dir, track)[1]


def _locate_archive(track_dir: Path, artifact_file: str) -> tuple[Path | None, str]:
    reason = unsafe_path_reason(artifact_file)
    if reason:
        return None, f"artifact_file {artifact_file!r}: {reason}"
    for candidate in (track_dir / artifact_file, track_dir / "artifacts" / artifact_file):
        if candidate.is_file() and not candidate.is_symlink():
            return candidate, ""
    return None, f"artifact_file {artifact_file!r} not found under {track_dir}"


def _native_label(
    row: dict[str, Any], ref: str, zip_path: Path, track: Track
) -> tuple[dict[str, Any], list[Problem]]:
    label: dict[str, Any] = {
        "track": track.value,
        "label": (row.get("label") or "").strip(),
        "expected_capabilities": [],
        "source": {"format": "phylax", "ref": ref, "row": dict(row)},
        "notes": "imported from a Phylax corpus",
    }
    sidecar_name = "ground_truth" if track is Track.REPOSITORIES else "expected_findings"
    sidecar = zip_path.parent / f"{ref}.{sidecar_name}.json"
    if not sidecar.is_file():
        if track is Track.REPOSITORIES:
            label["ground_truth"] = {"vulnerabilities": []}
        return label, []
    try:
        data = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return label, [Problem(sidecar, f"{ref}: not valid JSON: {exc}")]
    if track is Track.REPOSITORIES:
        # Phylax publishes `{}` (or a null list) for a repository with nothing planted.
        vulns = (data.get("vulnerabilities") or []) if isinstance(data, dict) else None
        label["ground_truth"] = {"vulnerabilities": vulns}
    else:
        label["expected_findings"] = data
    return label, []
