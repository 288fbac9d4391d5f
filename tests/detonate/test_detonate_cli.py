"""`assay detonate` and the round observer, end to end through the real sandbox."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from assay.corpus.interface import artifact_digest
from assay.detonate.observer import DetonationObserver
from assay.mechanism.spec import Track
from assay.records import codec
from assay.records.observed import Observed
from assay.records.plan import PlannedTask
from assay.sandbox.bwrap import BwrapBackend
from inprocess_cli import run_cli

pytestmark = pytest.mark.sandbox

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
TIMEBOMB = CORPUS / "skills" / "skill-0037" / "artifact"  # the log-rotation time bomb


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args)


def test_json_output_is_the_observed_context() -> None:
    result = assay("detonate", str(TIMEBOMB), "--track", "skills", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["track"] == "skills"
    (capability,) = data["capabilities"]
    assert capability["capability"] == "WRITE_SHELL_PROFILE"
    assert capability["protection"] == "system"
    assert capability["evidence"][0]["path"] == "~/.bashrc"
    assert "baseline" not in capability["profiles"]
    assert {p["name"] for p in data["profiles"]} >= {"baseline", "ci", "clock_plus_13mo"}
    assert "observer: strace, the weaker one" in " ".join(result.stderr.split())


def test_the_ebpf_observer_detonates_alike_and_says_nothing_of_weakness() -> None:
    args = ("--track", "skills", "--json", "--observer", "ebpf")
    result = assay("detonate", str(TIMEBOMB), *args)
    assert result.returncode == 0, result.stderr
    assert "weaker" not in result.stderr
    (capability,) = json.loads(result.stdout)["capabilities"]
    assert capability["capability"] == "WRITE_SHELL_PROFILE"


def test_table_output_names_the_gated_capability() -> None:
    result = assay("detonate", str(TIMEBOMB), "--track", "skills")
    assert result.returncode == 0, result.stderr
    assert "WRITE_SHELL_PROFILE" in result.stdout
    assert "write: ~/.bashrc" in result.stdout  # the evidence, one line each
    assert "gated" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--track", "repositories"), "not detonated"),
        (("--track", "nonsense"), "unknown track"),
    ],
)
def test_refuses_what_it_cannot_detonate(args: tuple[str, ...], message: str) -> None:
    result = assay("detonate", str(TIMEBOMB), *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_observer_detonates_each_artifact_once(backend: BwrapBackend) -> None:
    observer = DetonationObserver(backend)

    def planned(task_id: str, track: Track) -> PlannedTask:
        return PlannedTask(
            track, task_id, "malicious", str(TIMEBOMB), artifact_digest(TIMEBOMB), (), ()
        )

    first = observer(planned("a", Track.SKILLS))
    again = observer(planned("copy-of-a", Track.SKILLS))
    assert first is not None and again is first  # same digest: not detonated twice
    assert observer(planned("r", Track.REPOSITORIES)) is None
    assert codec.decode(codec.encode(first), Observed) == first  # stored with the round


def test_markdown_output_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "detonation.md"
    result = assay(
        "detonate", str(TIMEBOMB), "--track", "skills", "--format", "markdown", "-o", str(out)
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.startswith("## assay detonation of ")
    assert "| WRITE_SHELL_PROFILE | system |" in text
    assert "| ` write: ~/.bashrc ` |" in text  # the evidence, a code span in Markdown
