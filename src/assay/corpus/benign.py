"""Benign counterparts: pinned sdists and npm tarballs fetched with the ordinary clients.

`pip download --no-binary :all: --no-deps` and `npm pack` fetch exactly what the
registries serve; each archive is kept as served (its sha256 recorded beside the
integrity string npm reports) and labelled safe. Note that pip prepares an sdist's
metadata when it downloads it, which runs the package's build backend on this host:
fetch only packages trusted enough to be the benign class.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from assay.corpus.importing import PackedTask, task_id, write_tasks
from assay.corpus.interface import Label, Problem
from assay.corpus.packed import file_sha256
from assay.corpus.phylax import ImportSummary
from assay.schema.boundedjson import JsonLimitError, parse_bounded

FETCH_TIMEOUT_S = 300.0
_OUTPUT_CAP = 1 << 20


@dataclass(frozen=True)
class Fetched:
    archive: Path
    source: dict[str, Any]


class FetchError(Exception):
    """A client could not fetch what was asked; the message says which and why."""


def add_benign(
    dest: Path,
    *,
    pypi: tuple[str, ...] = (),
    npm: tuple[str, ...] = (),
    find_links: Path | None = None,
) -> ImportSummary:
    """Fetch every pinned package and write it into the corpus `dest` as a safe task.

    One package refused (not fetched, or its archive past the extractors' caps) costs
    only itself: the rest are written and the summary's `refused` names it.

    `find_links` makes pip read a local folder of archives instead of the index (an
    offline mirror, or the tests' fixture)."""
    with tempfile.TemporaryDirectory(prefix="assay-benign-") as tmp:
        fetches: Sequence[tuple[str, Callable[[], Fetched]]] = [
            (spec, partial(fetch_pypi, spec, Path(tmp) / f"pypi-{n}", find_links))
            for n, spec in enumerate(pypi)
        ] + [(spec, partial(fetch_npm, spec, Path(tmp) / f"npm-{n}")) for n, spec in enumerate(npm)]
        problems: list[Problem] = []
        tasks = []
        for spec, fetch in fetches:
            try:
                tasks.append(_safe_task(fetch()))
            except FetchError as exc:
                problems.append(Problem(Path(spec), str(exc)))
        written = write_tasks(dest, tasks, keep_going=True)
        return ImportSummary(written.dest, written.tasks, (*problems, *written.refused))


def _safe_task(fetched: Fetched) -> PackedTask:
    source = fetched.source
    return PackedTask(
        task_id=task_id(source["registry"], source["package"], source["version"]),
        label=Label.SAFE,
        archive=fetched.archive,
        source=source,
        notes=f"popular {source['registry']} package {source['package']} {source['version']}",
    )


def fetch_pypi(spec: str, into: Path, find_links: Path | None = None) -> Fetched:
    """`NAME==VERSION` as its sdist."""
    name, sep, version = spec.partition("==")
    if not sep or not name.strip() or not version.strip() or spec.startswith("-"):
        raise FetchError(f"{spec!r}: pin an exact version, NAME==VERSION")
    # Offline there is no index to fetch build requirements from: pip then prepares the
    # sdist's metadata with this interpreter's own setuptools.
    index = ["--no-index", "--no-build-isolation", "--find-links", str(find_links)]
    index = index if find_links else []
    # Only the package itself must be the sdist: `:all:` would build every build
    # requirement from source too (slow, and each one a build backend run on this host).
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    argv += ["--no-binary", name.strip(), "--no-deps", "--dest", str(into), *index, "--", spec]
    _run(argv, spec)
    archive = _only_file(into, spec)
    return Fetched(
        archive,
        {
            "registry": "pypi",
            "package": name.strip(),
            "version": version.strip(),
            "registry_sha256": file_sha256(archive),
            "fetched_with": "pip download --no-binary NAME --no-deps",
        },
    )


def fetch_npm(spec: str, into: Path) -> Fetched:
    """`NAME@VERSION` (or any spec `npm pack` accepts) as its tarball."""
    if spec.startswith("-"):
        raise FetchError(f"{spec!r}: not a package spec")
    into.mkdir(parents=True)
    out = _run(["npm", "pack", "--json", "--pack-destination", str(into), "--", spec], spec)
    try:
        packed = parse_bounded(out, max_bytes=_OUTPUT_CAP)
    except JsonLimitError as exc:
        raise FetchError(f"{spec!r}: unreadable npm pack output: {exc}") from exc
    if not (isinstance(packed, list) and packed and isinstance(packed[0], dict)):
        raise FetchError(f"{spec!r}: npm pack reported no tarball")
    meta = packed[0]
    archive = _only_file(into, spec)
    return Fetched(
        archive,
        {
            "registry": "npm",
            "package": str(meta.get("name", "")),
            "version": str(meta.get("version", "")),
            "registry_sha256": file_sha256(archive),
            "integrity": str(meta.get("integrity", "")),
            "fetched_with": "npm pack",
        },
    )


def _run(argv: list[str], spec: str) -> bytes:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=FETCH_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchError(f"{spec!r}: {argv[0]} could not run: {exc}") from exc
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").splitlines()
        errors = [line.strip() for line in lines if "error" in line.lower()]
        tail = (errors or [line.strip() for line in lines])[-3:]
        raise FetchError(f"{spec!r}: {Path(argv[0]).name} failed: {' / '.join(tail)}")
    return done.stdout[:_OUTPUT_CAP]


def _only_file(folder: Path, spec: str) -> Path:
    files = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    if len(files) != 1:
        raise FetchError(f"{spec!r}: expected one archive, the client left {len(files)}")
    return files[0]
