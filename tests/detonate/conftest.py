"""Fixtures for detonating artifacts in the real sandbox."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.detonate import Detonation, detonate
from assay.mechanism.spec import Track
from assay.sandbox import default_backend
from assay.sandbox.bwrap import BwrapBackend


@pytest.fixture(scope="session")
def backend() -> BwrapBackend:
    # The process's one backend, as a round's: a backend's directory and cgroups are per
    # process, and a release by any other backend here would pull them from under it.
    b = default_backend()
    assert isinstance(b, BwrapBackend)
    b.sweep_stale()
    return b


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


@pytest.fixture
def detonate_tree(backend: BwrapBackend, tmp_path: Path) -> Callable[..., Detonation]:
    """Detonate an artifact written from {relative path: text}, under chosen profiles;
    each call's artifact is its own tree (a control never sees the hostile one's files)."""
    made = itertools.count()

    def run(
        files: dict[str, str], track: Track, only: tuple[str, ...] = ("baseline",)
    ) -> Detonation:
        artifact = write_tree(tmp_path / f"artifact{next(made)}", files)
        return detonate(artifact, track, backend=backend, only=only)

    return run
