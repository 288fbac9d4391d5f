"""Names and reasons from agents and artifacts are shown as text, never as console markup."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_markup_in_a_bad_record_is_printed_not_interpreted(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"agent": "a", "track": "[/bold]"}) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "assay", "score", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "[/bold]" in result.stderr
    assert "Traceback" not in result.stderr


def test_markup_in_a_corpus_path_is_printed_not_interpreted(tmp_path: Path) -> None:
    task = tmp_path / "corpus" / "skills" / "[red]task"
    (task / "artifact").mkdir(parents=True)
    (task / "label.json").write_text("{not json")
    result = subprocess.run(
        [sys.executable, "-m", "assay", "corpus", "validate", str(tmp_path / "corpus")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "[red]task" in result.stderr
    assert "Traceback" not in result.stderr
