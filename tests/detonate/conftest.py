"""Fixtures for detonating artifacts in the real sandbox."""

from __future__ import annotations

import itertools
import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.corpus.native import NativeCorpus
from assay.detonate import Detonation, detonate
from assay.detonate.cache import DetonationCache
from assay.mechanism.spec import BEHAVIOURAL_TRACKS, Track
from assay.records.observed import Observed
from assay.sandbox import default_backend
from assay.sandbox.bwrap import BwrapBackend

BUNDLED = Path(__file__).resolve().parents[2] / "corpus"
_REAL_HOME_PATHS = (".ssh", ".aws", ".bashrc", ".profile", ".cache", ".config/systemd", ".netrc")
_HOST_WRITTEN = (".cache/uv", ".cache/pip", ".cache/assay")

Detonated = Callable[[str], Observed]


@pytest.fixture(scope="session")
def backend() -> BwrapBackend:
    # The process's one backend, as a round's: a backend's directory and cgroups are per
    # process, and a release by any other backend here would pull them from under it.
    b = default_backend()
    assert isinstance(b, BwrapBackend)
    b.sweep_stale()
    return b


def _fingerprint(home: Path) -> dict[str, tuple[int, int, int]]:
    """Inode, size and modification time of everything under the real home's sensitive
    paths. A stat per file, not a hash: hashing the whole ~/.cache twice per detonation
    cost more than the detonations. The host's own package caches and assay's own cache
    are left out: other processes on the host write them while a test runs."""
    skipped = {str(home / name) for name in _HOST_WRITTEN}
    out: dict[str, tuple[int, int, int]] = {}
    for name in _REAL_HOME_PATHS:
        root = home / name
        if root.is_file():
            info = root.lstat()
            out[str(root)] = (info.st_ino, info.st_size, info.st_mtime_ns)
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if os.path.join(folder, d) not in skipped)
            for file in files:
                info = os.lstat(path := os.path.join(folder, file))
                out[path] = (info.st_ino, info.st_size, info.st_mtime_ns)
    return out


@pytest.fixture(scope="session")
def detonations(backend: BwrapBackend) -> Detonated:
    """The day's detonation of a bundled sample by its `track/task` key, read through the
    run's detonation cache (tests/conftest.py), so each sample is detonated once per run
    whichever test or round asks first; the real home must be unchanged after each."""
    kept = DetonationCache.configured()
    assert kept is not None, "the suite shares one detonation cache (tests/conftest.py)"
    bundled = [t for track in BEHAVIOURAL_TRACKS for t in NativeCorpus(BUNDLED).tasks(track)]
    tasks = {f"{t.track.value}/{t.task_id}": t for t in bundled}

    def observe(key: str) -> Observed:
        task = tasks[key]

        def run() -> Observed:
            before = _fingerprint(Path.home())
            result = detonate(task.artifact_dir, task.track, backend=backend).observed()
            assert _fingerprint(Path.home()) == before
            return result

        return kept.observe(task.track, task.artifact_digest(), run)

    return observe


def write_tree(root: Path, files: dict[str, str] | dict[str, str | bytes]) -> Path:
    """The artifact's files: text dedented, bytes (a wheel) as they are."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip())
    return root


@pytest.fixture
def detonate_tree(backend: BwrapBackend, tmp_path: Path) -> Callable[..., Detonation]:
    """Detonate an artifact written from {relative path: text}, under chosen profiles;
    each call's artifact is its own tree (a control never sees the hostile one's files)."""
    made = itertools.count()

    def run(
        files: dict[str, str] | dict[str, str | bytes],
        track: Track,
        only: tuple[str, ...] = ("baseline",),
    ) -> Detonation:
        artifact = write_tree(tmp_path / f"artifact{next(made)}", files)
        return detonate(artifact, track, backend=backend, only=only)

    return run
