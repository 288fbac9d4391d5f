"""Hidden characters are shown as escapes wherever assay shows text to a person."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.schema.visible import visible
from inprocess_cli import run_cli

# Arabic letter mark, line and paragraph separators, word joiner, soft hyphen, a TAG
# letter (invisible ASCII), a variation selector, a bidi override and an escape.
HIDDEN = "\u061c\u2028\u2029\u2060\u00ad\U000e0041\ufe0f\u202e\x1b"


@pytest.mark.parametrize(
    ("char", "escape"),
    [
        ("\u061c", "\\u061c"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
        ("\u2060", "\\u2060"),
        ("\u00ad", "\\xad"),
        ("\U000e0041", "\\U000e0041"),
        ("\ufe0f", "\\ufe0f"),
        ("\u202e", "\\u202e"),
        ("\x1b", "\\x1b"),
    ],
)
def test_each_hidden_character_becomes_its_escape(char: str, escape: str) -> None:
    assert char in HIDDEN
    assert visible(f"a{char}b") == f"a{escape}b"


def test_text_people_write_is_left_alone() -> None:
    for text in ("plain ascii\twith a tab\n", "café, Straße, 中文, русский, 🙂", ""):
        assert visible(text) == text


def test_a_score_table_shows_hidden_characters_of_an_agent_id(tmp_path: Path) -> None:
    agent = f"agent{HIDDEN}"
    rows = [
        {"agent": agent, "track": "skills", "task": task, "label": label, "rep": 0,
         "status": "completed", "verdict": verdict}
        for task, label, verdict in (("t1", "malicious", "BLOCK"), ("t2", "safe", "ALLOW"))
    ]  # fmt: skip
    records = tmp_path / "r.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_cli(["score", str(records)])
    assert result.returncode == 0, result.stderr
    assert not set(HIDDEN) & set(result.stdout)
    assert "\\u2028" in result.stdout and "\\U000e0041" in result.stdout
