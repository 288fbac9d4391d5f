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
    return copy_tasks(tmp_path / "corpus", 2, ("skills", "repositories"))


def copy_tasks(root: Path, per_label: int, tracks: tuple[str, ...]) -> Path:
    """The first `per_label` malicious and safe tasks of each track, copied under `root`."""
    for track in tracks:
        tasks = sorted((BUNDLED / track).iterdir())
        for label in ("malicious", "safe"):
            chosen = [t for t in tasks if f'"{label}"' in (t / "label.json").read_text()]
            for task in chosen[:per_label]:
                shutil.copytree(task, root / track / task.name, symlinks=True)
    return root


@pytest.fixture
def every_track_corpus(tmp_path: Path) -> Path:
    """One malicious and one safe task of every track, from the bundled corpus."""
    return copy_tasks(
        tmp_path / "corpus4", 1, ("skills", "mcp_servers", "packages", "repositories")
    )


@pytest.fixture
def skills_pair(tmp_path: Path) -> Path:
    """One malicious and one safe skill: enough to see how an agent fails."""
    return copy_tasks(tmp_path / "pair", 1, ("skills",))


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
