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
    # --fail-under 0: the bar is "some rep completed", not eligibility on two tasks.
    result = assay(
        "eval", str(EXAMPLE), "--track", track, "--corpus", str(every_track_corpus),
        "--fail-under", "0", "--json",
    )  # fmt: skip
    payload = json.loads(result.stdout)
    reps = [rep for task in payload["task_results"] for rep in task["reps"]]
    assert len(payload["task_results"]) == 2 and reps
    assert all(rep["status"] == "completed" for rep in reps), reps
    assert all(rep["cpu_s"] <= rep["cpu_budget_s"] for rep in reps)


# Written the way Phylax agents are: bare string verdict, no confidence, findings
# without a plane, no lines_analysed, capabilities as bare names, and (like
# Phylax's own packages evidence) no context_plane on packages.
PHYLAX_STYLE = """
import contextlib, os, socket, subprocess


def agent_main(context):
    probe = context.get("probe") or {}
    if probe:
        with open(probe["file_path"], "w") as f:
            f.write(probe["file_content"])
        with contextlib.suppress(OSError):
            socket.getaddrinfo(probe["dns_host"], 80)
        subprocess.run(["echo", probe["process_echo"]], capture_output=True)
    track = context["track"]
    findings = [{"category": "install_hook", "severity": "CRITICAL", "title": "runs code"}]
    if track == "repositories":
        evidence = {"audit": {"files_analysed": 1}, "vulnerabilities": []}
    elif track == "packages":
        evidence = {"action_plane": {"capabilities": ["EXEC_SHELL"]},
                    "lifecycle": {"install_time": {}}, "supply_chain": {"dependencies": []}}
    else:
        evidence = {"action_plane": {"capabilities": ["EXEC_SHELL"]},
                    "context_plane": {"injected_instructions": []},
                    "mcp_surface": {"exposed_tools": []}}
    return {"verdict": "WARN", "evidence": evidence, "findings": findings}
"""


@pytest.mark.parametrize("track", ["skills", "mcp_servers", "packages", "repositories"])
def test_an_agent_written_the_phylax_way_runs_unmodified(
    assay: Assay, every_track_corpus: Path, tmp_path: Path, track: str
) -> None:
    agent = tmp_path / "phylax_style.py"
    agent.write_text(PHYLAX_STYLE)
    args = ("eval", str(agent), "--track", track, "--corpus", str(every_track_corpus), "--json")
    payload = json.loads(assay(*args, "--reps", "1", check=False).stdout)
    reps = [rep for task in payload["task_results"] for rep in task["reps"]]
    if track == "packages":
        assert all(rep["reason"] == "malformed_report" for rep in reps), reps
        assert all("evidence.context_plane" in rep["detail"] for rep in reps)
    else:
        assert all(rep["status"] == "completed" for rep in reps), reps
