"""Fixtures shared by the suites that run real rounds through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock
from hypothesis import settings

from assay.detonate.cache import ENVIRONMENT as DETONATION_CACHE
from inprocess_cli import run_cli
from round_fixtures import StoredRound, reference_round_args

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "corpus"

# Hypothesis's per-example deadline is a timing assertion: under a parallel suite an
# example can be slow for reasons that are not the code's. Examples stay at 100.
settings.register_profile("assay", deadline=None)
settings.load_profile("assay")


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    """One malicious and one safe task of skills and of repositories, from the bundled corpus
    (the reference round's: 2 agents x (2 skills tasks x 3 reps + 2 repositories x 2 reps))."""
    return copy_tasks(tmp_path / "corpus", 1, ("skills", "repositories"))


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


@pytest.fixture
def skills_packages_pair(tmp_path: Path) -> Path:
    """One malicious and one safe task of skills and of packages: one agent on two tracks."""
    return copy_tasks(tmp_path / "pairs", 1, ("skills", "packages"))


Assay = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def assay(tmp_path: Path) -> Assay:
    """`assay ARGS` in this process (see inprocess_cli), in `tmp_path`, with its own data home."""
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = run_cli(args, env=env, cwd=tmp_path)
        if check:
            assert result.returncode == 0, result.stderr
        return result

    return run


@pytest.fixture
def assay_process(tmp_path: Path) -> Assay:
    """`python -m assay ARGS` as a real process: for what only a process shows."""
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


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temp root the run's parallel workers have in common."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def _shared_detonations(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Rounds all over the suite (and the processes they start) share one detonation
    cache, as a validator's rounds of a day do: each artifact is detonated once per run."""
    os.environ[DETONATION_CACHE] = str(shared_root(tmp_path_factory) / "detonations")


@pytest.fixture(scope="session")
def _reference_round(tmp_path_factory: pytest.TempPathFactory) -> StoredRound:
    """The reference round, run once per test run: parallel workers share one, made
    by whichever asks first (the others wait on the lock), in their common temp root."""
    shared = shared_root(tmp_path_factory)
    folder = shared / "reference-round"
    with FileLock(str(shared / "reference-round.lock")):
        done = folder / "round.json"
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            corpus = copy_tasks(folder / "corpus", 1, ("skills", "repositories"))
            args = reference_round_args(corpus, folder / "reference.db", "--json")
            env = {"XDG_DATA_HOME": str(folder / "data")}
            result = run_cli(args, env=env, cwd=folder)
            assert result.returncode == 0, result.stderr
            (folder / "round.tmp").write_text(result.stdout)
            (folder / "round.tmp").rename(done)
    return StoredRound(folder / "reference.db", json.loads(done.read_text()))


@pytest.fixture
def reference_round(_reference_round: StoredRound, tmp_path: Path) -> StoredRound:
    """A copy of the reference round's store, this test's own to read, rescore, report
    or attest (the plan still names the shared artifact snapshots: do not resume it)."""
    db = tmp_path / "reference.db"
    shutil.copyfile(_reference_round.db, db)
    wal = _reference_round.db.with_name(f"{_reference_round.db.name}-wal")
    if wal.exists():
        shutil.copyfile(wal, db.with_name(f"{db.name}-wal"))
    return StoredRound(db, _reference_round.payload)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first (in their collected order), so the parallel run does not end
    waiting on one that started last; every worker sorts alike, as xdist requires."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
