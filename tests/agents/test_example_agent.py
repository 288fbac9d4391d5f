"""The example agent of docs/agents.md completes every rep on every track, through `assay eval`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

Assay = Callable[..., subprocess.CompletedProcess[str]]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "minimal_agent.py"


@pytest.mark.parametrize("track", ["skills", "mcp_servers", "packages", "repositories"])
def test_the_example_completes_every_rep(
    assay: Assay, every_track_corpus: Path, track: str
) -> None:
    result = assay(
        "eval", str(EXAMPLE), "--track", track, "--corpus", str(every_track_corpus), "--json"
    )
    payload = json.loads(result.stdout)
    reps = [rep for task in payload["task_results"] for rep in task["reps"]]
    assert len(payload["task_results"]) == 2 and reps
    assert all(rep["status"] == "completed" for rep in reps), reps
    assert all(rep["cpu_s"] <= rep["cpu_budget_s"] for rep in reps)
