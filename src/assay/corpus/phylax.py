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

One artifact is one task: a row naming an archive an earlier row of its track
named, or one that unpacks to the same tree as an earlier row's, is refused.
Imported as many tasks, one artifact would be drawn and scored as many times
(and its rows may disagree on its label); kept once, the import would have to
choose which row's label and ground truth are the truth. The curator decides.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import stat
import struct
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyzipper

from assay.corpus.interface import CorpusError, Problem, artifact_digest, unsafe_path_reason
from assay.corpus.native import ARTIFACT_DIR, LABEL_FILE, read_task
from assay.mechanism.spec import TRACKS, Track
from assay.schema.boundedfs import TreeLimitError, read_capped, read_limited, regular_file
from assay.schema.boundedjson import JsonLimitError, parse_bounded

_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_CHUNK = 1 << 16


@dataclass(frozen=True)
class ZipLimits:
    max_files: int = 2_000
    max_total_bytes: int = 64 << 20  # per archive, so per task
    # A higher inflation ratio than this on a sizeable member is a bomb, not source code.
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 1 << 20
    max_import_bytes: int = 1 << 30  # inflated bytes of every archive of one import
    max_central_bytes: int = 4 << 20  # the central directory zipfile would parse whole
    max_depth: int = 32  # path components of a member name
    max_csv_bytes: int = 16 << 20
    max_sidecar_bytes: int = 4 << 20


@dataclass(frozen=True)
class ImportSummary:
    dest: Path
    tasks: dict[Track, int]
    refused: tuple[Problem, ...] = ()  # tasks left out of an import that keeps going


class PhylaxImportError(Exception):
    """The import failed; nothing was written to DEST. Lists every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in problems))


class UnsafeArchive(Exception):
    """An archive was refused; the message says which member and why."""


def safe_extract(
    archive_path: Path,
    dest: Path,
    limits: ZipLimits = ZipLimits(),
    *,
    password: bytes | None = None,
) -> int:
    """Extract `archive_path` into the empty directory `dest`; returns the bytes written.

    With a `password`, encrypted members are read too (ZipCrypto or AES, as the
    public malware datasets seal their samples); the same checks apply to them.
    """
    check_central_directory(archive_path, limits)
    try:
        with _open_zip(archive_path, password) as archive:
            infos = archive.infolist()
            _check_declared(infos, limits)
            written = 0
            for info in infos:
                written += _extract_member(archive, info, dest, limits, written)
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        NotImplementedError,
        RuntimeError,  # encrypted members
        UnicodeDecodeError,  # names flagged UTF-8 that are not
        ValueError,
    ) as exc:
        raise UnsafeArchive(f"corrupt or unsupported zip: {type(exc).__name__}: {exc}") from exc
    return written


def _open_zip(path: Path, password: bytes | None) -> zipfile.ZipFile:
    """The stdlib reader, or pyzipper's for a sealed archive (the stdlib cannot read AES)."""
    if password is None:
        return zipfile.ZipFile(path)
    archive: zipfile.ZipFile = pyzipper.AESZipFile(path)
    archive.setpassword(password)
    return archive


_EOCD = struct.Struct("<4s4H2LH")
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")


def check_central_directory(path: Path, limits: ZipLimits) -> None:
    """The entry count and central-directory size the end record declares, checked
    before zipfile reads (and builds an object for) every entry of the directory."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            tail_size = min(size, _EOCD.size + 0xFFFF + _EOCD64_LOCATOR.size)
            handle.seek(size - tail_size)
            tail = handle.read(tail_size)
            at = tail.rfind(b"PK\x05\x06")
            if at < 0 or at + _EOCD.size > len(tail):
                raise UnsafeArchive("not a zip archive: no end-of-central-directory record")
            _, _, _, _, entries, cd_size, _, _ = _EOCD.unpack_from(tail, at)
            locator = at - _EOCD64_LOCATOR.size
            if locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
                _, _, offset, _ = _EOCD64_LOCATOR.unpack_from(tail, locator)
                handle.seek(offset)
                record = handle.read(_EOCD64.size)
                if len(record) < _EOCD64.size or record[:4] != b"PK\x06\x06":
                    raise UnsafeArchive("corrupt zip64 end-of-central-directory record")
                fields = _EOCD64.unpack(record)
                entries, cd_size = fields[7], fields[8]
    except OSError as exc:
        raise UnsafeArchive(f"unreadable archive: {exc.strerror}") from exc
    if entries > limits.max_files:
        raise UnsafeArchive(f"{entries} entries exceed the cap of {limits.max_files}")
    if cd_size > limits.max_central_bytes:
        raise UnsafeArchive(
            f"central directory of {cd_size} bytes exceeds {limits.max_central_bytes}"
        )


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
        if name.count("/") >= limits.max_depth:
            raise UnsafeArchive(f"member {name[:80]!r}…: deeper than {limits.max_depth} levels")
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
    unpacked = Path(tempfile.mkdtemp(prefix=".phylax-archives-", dir=dest.parent))
    try:
        archives = _Archives(unpacked, limits)
        problems: list[Problem] = []
        counts = {
            t: _import_track(src / t.value, staging / t.value, t, archives, problems)
            for t in tracks
        }
        if problems:
            raise PhylaxImportError(problems)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(unpacked, ignore_errors=True)
    return ImportSummary(dest, counts)


class _Archives:
    """Each archive unpacked once, however many rows of the import name it (rows of
    other tracks get hard links to the one copy; a second row of the same track is
    refused before this), and every byte inflated counted against the import's cap."""

    def __init__(self, root: Path, limits: ZipLimits) -> None:
        self.root = root
        self.limits = limits
        self.inflated = 0
        self.done: dict[tuple[int, int], Path | UnsafeArchive] = {}

    def extract(self, zip_path: Path, dest: Path) -> None:
        """Raises `UnsafeArchive` (again, for every row naming a refused archive)."""
        st = zip_path.stat()
        key = (st.st_dev, st.st_ino)
        if key not in self.done:
            self.done[key] = self._unpack(zip_path, self.root / str(len(self.done)))
        unpacked = self.done[key]
        if isinstance(unpacked, UnsafeArchive):
            raise unpacked
        shutil.copytree(unpacked, dest, copy_function=os.link, dirs_exist_ok=True)

    def _unpack(self, zip_path: Path, target: Path) -> Path | UnsafeArchive:
        left = self.limits.max_import_bytes - self.inflated
        limits = replace(self.limits, max_total_bytes=min(self.limits.max_total_bytes, left))
        target.mkdir()
        try:
            self.inflated += safe_extract(zip_path, target, limits)
        except UnsafeArchive as exc:
            shutil.rmtree(target, ignore_errors=True)
            if left < self.limits.max_total_bytes:
                return UnsafeArchive(
                    f"{exc} (the import's total cap of {self.limits.max_import_bytes} "
                    f"inflated bytes leaves {left})"
                )
            return exc
        return target


def _csv_rows(csv_path: Path, limits: ZipLimits) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """The rows with their line numbers, or why the file cannot be read (naming the row)."""
    try:
        raw = read_limited(csv_path, limits.max_csv_bytes)
    except TreeLimitError as exc:
        return [], str(exc)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return [], f"line {line} is not UTF-8 (byte {exc.start}); save the file as UTF-8"
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows: list[tuple[int, dict[str, Any]]] = []
    done = 0  # the last line read whole: an error is in the one after it
    try:
        missing = {"ref", "label", "artifact_file"} - set(reader.fieldnames or [])
        if missing:
            return [], f"missing columns {sorted(missing)}"
        done = reader.line_num
        for row in reader:
            rows.append((reader.line_num, row))
            done = reader.line_num
    except csv.Error as exc:
        return [], f"line {done + 1}: {exc}"
    return rows, ""


@dataclass
class _ArtifactOwners:
    """Which task of a track each archive file and each unpacked tree already is."""

    archives: dict[tuple[int, int], str] = field(default_factory=dict)
    trees: dict[str, str] = field(default_factory=dict)

    def archive(self, zip_path: Path, ref: str) -> Problem | None:
        """Checked before unpacking: a row naming a taken archive costs no extraction."""
        st = zip_path.stat()
        owner = self.archives.setdefault((st.st_dev, st.st_ino), ref)
        return None if owner == ref else self._taken(zip_path, ref, owner, "is")

    def tree(self, zip_path: Path, artifact: Path, ref: str) -> Problem | None:
        try:
            digest = artifact_digest(artifact)
        except CorpusError as exc:
            return Problem(artifact, f"{ref}: {exc}")
        owner = self.trees.setdefault(digest, ref)
        return None if owner == ref else self._taken(zip_path, ref, owner, "unpacks to")

    @staticmethod
    def _taken(zip_path: Path, ref: str, owner: str, how: str) -> Problem:
        return Problem(
            zip_path,
            f"{ref}: {zip_path.name} {how} the artifact of {owner}; one artifact is one task "
            "(imported again it would be drawn and scored again)",
        )


def _import_track(
    track_dir: Path, out_dir: Path, track: Track, archives: _Archives, problems: list[Problem]
) -> int:
    csv_path = track_dir / f"{track.value}.csv"
    rows, error = _csv_rows(csv_path, archives.limits)
    if error:
        problems.append(Problem(csv_path, error))
        return 0
    imported = 0
    owners = _ArtifactOwners()
    for number, row in rows:
        where = f"{csv_path.name} line {number}"
        found = _import_row(row, track_dir, out_dir, track, archives, owners)
        problems.extend(Problem(p.path, f"{p.message} ({where})") for p in found)
        imported += not found
    return imported


def _import_row(
    row: dict[str, Any],
    track_dir: Path,
    out_dir: Path,
    track: Track,
    archives: _Archives,
    owners: _ArtifactOwners,
) -> list[Problem]:
    ref = str(row.get("ref") or "").strip()
    if not _REF.fullmatch(ref):
        return [Problem(track_dir, f"ref {ref[:80]!r} is not a usable task id")]
    zip_path, error = _locate_archive(track_dir, str(row.get("artifact_file") or "").strip())
    if zip_path is None:
        return [Problem(track_dir, f"{ref}: {error}")]
    task_dir = out_dir / ref
    if task_dir.exists():
        return [Problem(zip_path, f"{ref}: duplicate ref")]
    taken = owners.archive(zip_path, ref)
    if taken is not None:
        return [taken]
    task_dir.mkdir(parents=True)
    try:
        archives.extract(zip_path, task_dir / ARTIFACT_DIR)
    except UnsafeArchive as exc:
        return [Problem(zip_path, f"{ref}: archive refused: {exc}")]
    except OSError as exc:
        return [Problem(zip_path, f"{ref}: cannot extract: {exc.strerror}")]
    taken = owners.tree(zip_path, task_dir / ARTIFACT_DIR, ref)
    if taken is not None:
        return [taken]
    label, problems = _native_label(row, ref, zip_path, track, archives.limits)
    if problems:
        return problems
    (task_dir / LABEL_FILE).write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    return read_task(task_dir, track)[1]


def _locate_archive(track_dir: Path, artifact_file: str) -> tuple[Path | None, str]:
    reason = unsafe_path_reason(artifact_file)
    if reason:
        return None, f"artifact_file {artifact_file[:120]!r}: {reason}"
    for base in (track_dir, track_dir / "artifacts"):
        found = regular_file(base, artifact_file)
        if found is not None:
            return found, ""
    return None, f"artifact_file {artifact_file[:120]!r} not found under {track_dir}"


def _native_label(
    row: dict[str, Any], ref: str, zip_path: Path, track: Track, limits: ZipLimits
) -> tuple[dict[str, Any], list[Problem]]:
    label: dict[str, Any] = {
        "track": track.value,
        "label": str(row.get("label") or "").strip(),
        "expected_capabilities": [],
        "source": {"format": "phylax", "ref": ref, "row": dict(row)},
        "notes": "imported from a Phylax corpus",
    }
    sidecar_name = "ground_truth" if track is Track.REPOSITORIES else "expected_findings"
    sidecar = zip_path.parent / f"{ref}.{sidecar_name}.json"
    if sidecar.is_symlink():
        return label, [Problem(sidecar, f"{ref}: sidecar is a symlink; links are refused")]
    if not sidecar.is_file():
        if track is Track.REPOSITORIES:
            label["ground_truth"] = {"vulnerabilities": []}
        return label, []
    try:
        data = parse_bounded(
            read_capped(sidecar, limits.max_sidecar_bytes + 1),
            max_bytes=limits.max_sidecar_bytes,
            strict=True,
        )
    except (TreeLimitError, JsonLimitError) as exc:
        return label, [Problem(sidecar, f"{ref}: not valid JSON: {exc}")]
    if track is Track.REPOSITORIES:
        # Phylax publishes `{}` (or a null list) for a repository with nothing planted.
        vulns = (data.get("vulnerabilities") or []) if isinstance(data, dict) else None
        label["ground_truth"] = {"vulnerabilities": vulns}
    else:
        label["expected_findings"] = data
    return label, []
