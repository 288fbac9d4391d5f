"""A regular (non-editable) install carries the bundled corpus and agents `assay demo` runs."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_the_wheel_ships_the_bundled_corpus_and_agents(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(tmp_path / "wheel"), str(ROOT)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    (wheel,) = (tmp_path / "wheel").glob("assay-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "assay/bundled/agents/keyword.py" in names
    assert any(n.startswith("assay/bundled/corpus/skills/") for n in names)
    assert "assay/mechanism/mechanism.toml" in names
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    # Run from a folder with no checkout in sight: only the installed copy can answer.
    probe = "from assay.validator.config import bundled_root; print(bundled_root())"
    env = {**os.environ, "PYTHONPATH": str(target)}
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env,
        cwd=tmp_path, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert Path(found) == target / "assay" / "bundled"
