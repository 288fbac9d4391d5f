"""While artifacts are detonated, before any rep, the progress says so ("detonating 1/2")
instead of sitting at 0/N."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

# `conftest` names a different module under each test folder, so nothing is imported
# from it by name here.
ROOT = Path(__file__).resolve().parents[2]
Assay = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = pytest.mark.sandbox  # the eval runs its agent sealed


def test_an_eval_says_it_is_detonating_before_its_first_rep(
    assay: Assay, skills_pair: Path
) -> None:
    result = assay(
        "eval",
        str(ROOT / "agents" / "block_all.py"),
        "--track",
        "skills",
        "--corpus",
        str(skills_pair),
        "--reps",
        "1",
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    lines = result.stderr.splitlines()
    detonating = [i for i, line in enumerate(lines) if "detonating" in line]
    assert [lines[i].split(": ", 1)[1] for i in detonating] == ["detonating 1/2", "detonating 2/2"]
    reps = [i for i, line in enumerate(lines) if " reps, " in line]
    assert reps and detonating[-1] < reps[0], "detonations are said before the reps"
