"""`assay score` as a user runs it, over a real file (in this process: see inprocess_cli)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.records.rep import RecordError, parse_lines
from assay.schema.mechanism_file import pinned
from inprocess_cli import run_cli

SPEC = pinned()

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "recorded-reps.jsonl"


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args)


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "agent": "a" * 64,
        "track": "skills",
        "task": "skills-0001",
        "label": "malicious",
        "rep": 0,
        "status": "completed",
        "verdict": "BLOCK",
    }
    return {**base, **overrides}


def write(path: Path, records: list[dict[str, Any]], extra: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + extra)
    return path


def test_example_scores_and_weights_as_json() -> None:
    result = assay("score", str(EXAMPLE), "--seed", "demo", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["status"] == "completed"
    assert set(payload["scores"]) == {"skills", "mcp_servers", "packages", "repositories"}
    assert sum(payload["weights"].values()) == pytest.approx(1.0)
    skills = next(iter(payload["scores"]["skills"].values()))
    assert {"score", "eligible", "mcc", "clamped_mcc", "findings", "confusion"} <= set(skills)


def test_json_output_is_byte_identical_across_runs() -> None:
    first = assay("score", str(EXAMPLE), "--seed", "demo", "--json").stdout
    assert first == assay("score", str(EXAMPLE), "--seed", "demo", "--json").stdout


def test_readable_tables() -> None:
    result = assay("score", str(EXAMPLE))
    assert result.returncode == 0
    assert "weights" in result.stdout and "repositories" in result.stdout


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("not json at all\n", "line 3: JSON is malformed"),
        (json.dumps(record(track="videos")) + "\n", "line 3: Invalid enum value 'videos'"),
        (json.dumps(record(verdict="MAYBE")) + "\n", "line 3: Invalid enum value 'MAYBE'"),
        (
            json.dumps({k: v for k, v in record().items() if k != "label"}) + "\n",
            "line 3: Object missing required field `label`",
        ),
        (
            json.dumps(record(status="failed", verdict=None)) + "\n",
            "line 3: a failed rep needs a reason",
        ),
    ],
)
def test_bad_record_names_its_line_and_prints_no_scores(
    tmp_path: Path, bad: str, message: str
) -> None:
    good = [record(rep=0), record(rep=1)]
    path = write(tmp_path / "r.jsonl", good, extra=bad)
    result = assay("score", str(path), "--json")
    assert result.returncode != 0
    assert message in result.stderr
    assert result.stdout == ""


def test_duplicate_reps_and_inconsistent_truth_are_refused() -> None:
    with pytest.raises(RecordError, match="appears twice"):
        from assay.validator.scoring import scorecard

        scorecard(parse_lines([json.dumps(record()), json.dumps(record())]), salt="", spec=SPEC)
    with pytest.raises(RecordError, match="differs between records"):
        scorecard(
            parse_lines([json.dumps(record()), json.dumps(record(rep=1, label="safe"))]),
            salt="",
            spec=SPEC,
        )


def test_missing_tasks_for_an_agent_are_refused() -> None:
    from assay.validator.scoring import scorecard

    lines = [json.dumps(record()), json.dumps(record(agent="b" * 64, task="skills-0002"))]
    with pytest.raises(RecordError, match="scores would be partial"):
        scorecard(parse_lines(lines), salt="", spec=SPEC)


def test_missing_file(tmp_path: Path) -> None:
    result = assay("score", str(tmp_path / "absent.jsonl"))
    assert result.returncode != 0
    assert "cannot read" in result.stderr
