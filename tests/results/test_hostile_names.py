"""Names and reasons from agents and artifacts are shown as text, never as console markup."""

from __future__ import annotations

import json
from pathlib import Path

from inprocess_cli import run_cli


def test_markup_in_a_bad_record_is_printed_not_interpreted(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"agent": "a", "track": "[/bold]"}) + "\n")
    result = run_cli(["score", str(path)])
    assert result.returncode == 2
    assert "[/bold]" in result.stderr
    assert "Traceback" not in result.stderr


def test_markup_in_a_corpus_path_is_printed_not_interpreted(tmp_path: Path) -> None:
    task = tmp_path / "corpus" / "skills" / "[red]task"
    (task / "artifact").mkdir(parents=True)
    (task / "label.json").write_text("{not json")
    result = run_cli(["corpus", "validate", str(tmp_path / "corpus")])
    assert result.returncode == 1
    assert "[red]task" in result.stderr
    assert "Traceback" not in result.stderr
