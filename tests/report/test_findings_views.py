"""An author sees their own findings beside the expected ones, with why each matched or
not, in every view of an eval: `--json`, the terminal's `--verbose`, HTML and Markdown."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

Assay = Callable[..., subprocess.CompletedProcess[str]]

# Reports one finding at line 40 of a skill's script, spelling the path its own way.
AGENT = """
def agent_main(context):
    probe = context.get("probe") or {}
    if probe:
        with open(probe["file_path"], "w") as f:
            f.write(probe["file_content"])
        import socket, subprocess
        try:
            socket.getaddrinfo(probe["dns_host"], 80)
        except OSError:
            pass
        subprocess.run(["echo", probe["process_echo"]], capture_output=True)
    finding = {"category": "credential_theft", "severity": "CRIT",
               "title": "Reads the SSH private key", "file": "./scripts\\\\sync.py", "line": 40}
    return {"verdict": "BLOCK", "findings": [finding],
            "evidence": {"action_plane": {"capabilities": []},
                         "context_plane": {"injected_instructions": []}}}
"""


def _line_check(pair: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pair["checks"] if c["criterion"] == "line")


def test_eval_shows_findings_beside_the_expected_in_every_view(
    assay: Assay, skills_pair: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "my_agent.py"
    agent.write_text(AGENT)
    html, md = tmp_path / "report.html", tmp_path / "report.md"
    base = ("eval", str(agent), "--track", "skills", "--corpus", str(skills_pair), "--reps", "1")
    payload = json.loads(assay(*base, "--json", "--html", str(html), check=False).stdout)
    (malicious,) = [t for t in payload["task_results"] if t["label"] == "malicious"]
    matching = malicious["matching"]
    assert matching["kind"] == "findings" and matching["rep"] == 0
    assert matching["reported"][0]["line"] == 40 and matching["expected"]
    about_expected = [p for p in matching["pairs"] if p["subject"] == "expected"]
    assert len(about_expected) == len(matching["expected"])
    for pair in about_expected:
        expected = matching["expected"][pair["expected"]]
        assert pair["reported"] == 0  # the one reported finding is the nearest to each
        file = next(c for c in pair["checks"] if c["criterion"] == "file")
        assert file["reported"] == "scripts/sync.py"  # the spelling as normalised
        near = abs(expected["line"] - 40) <= matching["line_window"]
        assert _line_check(pair)["passed"] is near
        assert pair["matched"] is (near and pair["agrees"])
    assert malicious["reps"][0]["verdict"] == "BLOCK"

    terminal = assay(*base, "--verbose", check=False).stdout
    assert "rep 0's report (line window 10" in terminal
    assert "✓ file scripts/sync.py vs scripts/sync.py: same file" in terminal
    assert "lines apart, more than 10" in terminal

    page = html.read_text()
    assert "lines apart, more than 10" in page and 'class="pairs"' in page
    assay(*base, "--format", "markdown", "--output", str(md), check=False)
    assert "#### Findings beside the expected ones, task by task" in md.read_text()
