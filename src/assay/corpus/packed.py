"""Artifacts a corpus keeps packed: a package archive as its registry served it, or a
malware sample sealed the way the public datasets seal theirs (an encrypted zip).

A label's `archive` entry names the archive inside `artifact/` (and its password when
it is sealed). Nothing in the corpus tree is then runnable at rest: the archive is
unpacked only when a round snapshots the task (into the round's own directory) or
a tool materialises it into a private temporary directory, always with the safe
extractors: path escapes, links, special files, duplicate names and bombs are
refused, for the tar layer as for the zip layer.

Unpacking peels what the datasets wrap around a package: a sealed zip, then the
sdist or tarball it holds, then the single top-level folder each of those keeps
(`name-1.0/`, npm's `package/`), so the sandbox and the agents see the package's
own tree with its `setup.py` or `package.json` at the root.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyzipper

from assay.corpus.interface import CorpusError, PackedArchive, unsafe_path_reason
from assay.corpus.phylax import UnsafeArchive, ZipLimits, safe_extract
from assay.schema.boundedfs import regular_file

# The password the public malware datasets document for their sealed samples.
DATASET_PASSWORD = "infected"
TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")
ZIP_SUFFIXES = (".zip",)
_CHUNK = 1 << 16
DEFAULT_LIMITS = ZipLimits()
_MAX_LIFTS = 4  # single-folder levels peeled off (dataset folder, sdist folder, ...)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def seal(source: Path, sealed: Path, password: str = DATASET_PASSWORD) -> None:
    """Store the file `source` as the only member of a new AES-encrypted zip `sealed`."""
    with pyzipper.AESZipFile(
        sealed, "x", compression=pyzipper.ZIP_DEFLATED, encryption=pyzipper.WZ_AES
    ) as archive:
        archive.setpassword(password.encode())
        archive.write(source, source.name)


def is_package_archive(name: str) -> bool:
    return name.lower().endswith(TAR_SUFFIXES + ZIP_SUFFIXES)


def unpack_archive(
    artifact_dir: Path, packed: PackedArchive, dest: Path, limits: ZipLimits = DEFAULT_LIMITS
) -> None:
    """Unpack the task's archive into the new directory `dest` (its parent must exist).

    Raises `UnsafeArchive` naming the archive and the reason; `dest` is then absent.
    """
    archive = regular_file(artifact_dir, packed.file)
    if archive is None:
        raise UnsafeArchive(f"{packed.file!r} is not a regular file of the artifact")
    password = packed.password.encode() if packed.password is not None else None
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as tmp:
        outer = Path(tmp) / "outer"
        _unpack_file(archive, outer, limits, password)
        root = _lift(outer)
        inner = _lone_archive(root)
        if inner is not None:
            nested = Path(tmp) / "inner"
            _unpack_file(inner, nested, limits, None)
            root = _lift(nested)
        root.rename(dest)


@contextmanager
def materialised(
    artifact_dir: Path, packed: PackedArchive | None, workdir: Path | None = None
) -> Iterator[Path]:
    """The artifact as agents see it: `artifact_dir` itself, or its archive unpacked
    into a private temporary directory (under `workdir` when given) removed on exit.
    Raises `CorpusError` when the archive is refused."""
    if packed is None:
        yield artifact_dir
        return
    with tempfile.TemporaryDirectory(prefix=".artifact-", dir=workdir) as tmp:
        dest = Path(tmp) / "artifact"
        try:
            unpack_archive(artifact_dir, packed, dest)
        except UnsafeArchive as exc:
            raise CorpusError(f"{artifact_dir}: archive {packed.file!r} refused: {exc}") from exc
        yield dest


def _unpack_file(path: Path, dest: Path, limits: ZipLimits, password: bytes | None) -> None:
    dest.mkdir()
    name = path.name.lower()
    if name.endswith(ZIP_SUFFIXES):
        safe_extract(path, dest, limits, password=password)
    elif name.endswith(TAR_SUFFIXES):
        safe_extract_tar(path, dest, limits)
    else:
        raise UnsafeArchive(f"{path.name!r}: not a .zip, .tar.gz, .tgz or .tar archive")


def _lift(root: Path) -> Path:
    """Down through folders that are the only entry of their parent."""
    for _ in range(_MAX_LIFTS):
        entries = list(root.iterdir())
        if len(entries) != 1 or not entries[0].is_dir() or entries[0].is_symlink():
            break
        root = entries[0]
    return root


def _lone_archive(root: Path) -> Path | None:
    """The package archive a dataset folder holds alone (a sample's sdist or tarball)."""
    entries = list(root.iterdir())
    if len(entries) == 1 and entries[0].is_file() and is_package_archive(entries[0].name):
        return entries[0]
    return None


def safe_extract_tar(archive_path: Path, dest: Path, limits: ZipLimits = DEFAULT_LIMITS) -> int:
    """Extract a (gzipped) tar into the empty directory `dest`; returns the bytes written.

    Members are streamed one at a time (a tar has no directory to check first), each
    checked before anything of it is written: only regular files and folders, names
    that stay inside `dest`, no name twice, and caps on entries and bytes.
    """
    written = 0
    try:
        with tarfile.open(archive_path, "r:*") as archive:
            for count, member in enumerate(archive, start=1):
                if count > limits.max_files:
                    raise UnsafeArchive(f"more than {limits.max_files} entries")
                written += _extract_tar_member(archive, member, dest, limits, written)
    except (tarfile.TarError, EOFError, zlib.error, UnicodeError, ValueError) as exc:
        raise UnsafeArchive(f"corrupt or unsupported tar: {type(exc).__name__}: {exc}") from exc
    except FileExistsError as exc:
        raise UnsafeArchive(f"member {exc.filename!r} appears twice") from exc
    except OSError as exc:
        raise UnsafeArchive(f"cannot extract {exc.filename!r}: {exc.strerror}") from exc
    return written


def _extract_tar_member(
    archive: tarfile.TarFile, member: tarfile.TarInfo, dest: Path, limits: ZipLimits, so_far: int
) -> int:
    name = member.name.removeprefix("./").rstrip("/")
    if not name:
        return 0  # the archive's own root entry
    reason = unsafe_path_reason(name)
    if reason:
        raise UnsafeArchive(f"member {member.name!r}: {reason}")
    if name.count("/") >= limits.max_depth:
        raise UnsafeArchive(f"member {name[:80]!r}…: deeper than {limits.max_depth} levels")
    target = dest / name
    if member.isdir():
        target.mkdir(parents=True, exist_ok=True)
        return 0
    if not member.isreg():
        raise UnsafeArchive(f"member {member.name!r}: links and special files are not allowed")
    if so_far + member.size > limits.max_total_bytes:
        raise UnsafeArchive(
            f"tar bomb refused: {member.name!r} takes the archive past "
            f"{limits.max_total_bytes} bytes"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    source = archive.extractfile(member)
    if source is None:
        raise UnsafeArchive(f"member {member.name!r}: unreadable")
    with source, target.open("xb") as out:
        shutil.copyfileobj(source, out, _CHUNK)
    return member.size
