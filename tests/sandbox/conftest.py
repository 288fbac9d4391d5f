"""The sandbox tests make backends of their own (their own runtime base, no prestart)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.sandbox import default_backend
from assay.sandbox.bwrap.backend import BwrapBackend


@pytest.fixture(autouse=True)
def _no_shared_backend_alive() -> Iterator[None]:
    """A backend's cgroups are its process's (named after it), and its release removes
    them: the shared backend an earlier test of this worker used is released first, so
    a backend made here and released here never takes another's groups with it."""
    if default_backend.cache_info().currsize:
        default_backend().release()
    yield


@pytest.fixture
def private_backend() -> Iterator[BwrapBackend]:
    """A backend of the test's own: its own runtime base, nothing started ahead."""
    base = Path(tempfile.mkdtemp(prefix="assay-test-", dir="/tmp"))
    base.chmod(0o711)
    made = BwrapBackend(runtime_base=base / "rt", prestart=False)
    yield made
    made.release()
    shutil.rmtree(base)
