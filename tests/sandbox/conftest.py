"""The sandbox tests make backends of their own (their own runtime base, no prestart)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from assay.sandbox import default_backend


@pytest.fixture(autouse=True)
def _no_shared_backend_alive() -> Iterator[None]:
    """A backend's cgroups are its process's (named after it), and its release removes
    them: the shared backend an earlier test of this worker used is released first, so
    a backend made here and released here never takes another's groups with it."""
    if default_backend.cache_info().currsize:
        default_backend().release()
    yield
