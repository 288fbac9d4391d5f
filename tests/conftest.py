"""Fixtures shared by the suites that run real rounds through the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "corpus"


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    """Two malicious and two safe tasks of skills and of repositories, from the bundled corpus."""
    root = tmp_path / "corpus"
    for track in ("skills", "repositories"):
        tasks = sorted((BUNDLED / track).iterdir())
        malicious = [t for t in tasks if '"malicious"' in (t / "label.json").read_text()][:2]
        safe = [t for t in tasks if '"safe"' in (t / "label.json").read_text()][:2]
        for task in malicious + safe:
            shutil.copytree(task, root / track / task.name, symlinks=True)
    return root


Assay = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def assay(tmp_path: Path) -> Assay:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "assay", *args],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            cwd=tmp_path,
        )
        if check:
            assert result.returncode == 0, result.stderr
        return result

    return run
