"""The sandbox tests make backends of their own (their own runtime base, no prestart)."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def own_backend() -> Iterator[BwrapBackend]:
    """A backend with its own runtime base, nothing started ahead; released at the end."""
    base = Path(tempfile.mkdtemp(prefix="assay-test-", dir="/tmp"))
    base.chmod(0o711)
    made = BwrapBackend(runtime_base=base / "rt", prestart=False)
    try:
        yield made
    finally:
        made.release()
        shutil.rmtree(base)


@pytest.fixture
def private_backend() -> Iterator[BwrapBackend]:
    """A backend of the test's own."""
    with own_backend() as made:
        yield made


@pytest.fixture(scope="class")
def class_backend() -> Iterator[BwrapBackend]:
    """One backend for a class of tests (released before the module's next test)."""
    with own_backend() as made:
        yield made
