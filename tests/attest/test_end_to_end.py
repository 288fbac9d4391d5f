"""A real round (sandbox, SQLite, agent processes) from signed submission to verified SSSAs."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]


def test_signed_submissions_run_and_every_sssa_verifies(
    tmp_path: Path, small_corpus: Path, assay: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    corpus = small_corpus
    # Not in the cwd itself: a keyword.py there would shadow the stdlib module.
    submission = tmp_path / "submission"
    submission.mkdir()
    shutil.copy(ROOT / "agents" / "keyword.py", submission / "keyword.py")
    assay("keys", "new", "--out", str(tmp_path / "keys"), "--name", "alice")
    assay("agent", "pin", str(submission / "keyword.py"), "--track", "skills",
          "--key", str(tmp_path / "keys" / "alice.key"))  # fmt: skip
    db = tmp_path / "round.db"
    payload = json.loads(
        assay(
            "round", "run", "--tracks", "skills", "--corpus", str(corpus), "--db", str(db),
            "--seed", "abc", "--secret-file", str(tmp_path / "secret"), "--json",
            "--manifest", str(submission / "keyword.skills.manifest.json"),
            "--agent", str(ROOT / "agents" / "coin_flip.py"),
        ).stdout
    )  # fmt: skip
    assert payload["status"] == "completed" and payload["refused"] == {}
    assert len(payload["agents"]) == 2

    out = tmp_path / "sssa"
    first = assay("attest", "export", "--db", str(db), payload["round_id"], "--out", str(out))
    assert "created the validator's signing key" in first.stderr  # said once, where and why
    files = sorted(out.rglob("*.json"))
    assert len(files) == 2 * 2  # an SSSA per agent and skills task
    validator_pub = tmp_path / "data" / "assay" / "validator.key"
    assert validator_pub.stat().st_mode & 0o077 == 0
    for path in files:
        doc = json.loads(path.read_text())
        assert doc["artifact"]["bundle_sha256"] and doc["artifact"]["nonce"]
        assert doc["attestation"]["mechanism_digest"] == payload["mechanism_digest"]
        result = assay("attest", "verify", str(path), "--json")
        assert json.loads(result.stdout)["verified"] is True
    keyword_docs = [json.loads(p.read_text()) for p in files]
    author = (tmp_path / "keys" / "alice.pub").read_text().strip()
    assert sum(d["attestation"]["author_key"] == author for d in keyword_docs) == 2

    tampered = tmp_path / "tampered.json"
    doc = json.loads(files[0].read_text())
    doc["artifact"]["nonce"] = "0" * 64
    tampered.write_text(json.dumps(doc))
    failed = assay("attest", "verify", str(tampered), "--json", check=False)
    assert failed.returncode == 1
    assert "field 'artifact' does not match its signed hash" in failed.stdout
    # A file that is not there is the caller's mistake (2), not a failed verification (1).
    absent = tmp_path / "absent.json"
    missing = assay("attest", "verify", str(files[0]), str(absent), check=False)
    assert missing.returncode == 2
    assert f"{absent}: not a file" in missing.stderr

    # A store holding one report with no canonical form (written before reports were
    # checked at acceptance) costs only that agent x task its SSSA.
    with sqlite3.connect(db) as con:
        agent, task_id = con.execute("SELECT agent_hash, task_id FROM reps LIMIT 1").fetchone()
        rows = con.execute(
            "SELECT rowid, outcome_json FROM reps WHERE agent_hash = ? AND task_id = ?",
            (agent, task_id),
        ).fetchall()
        for rowid, text in rows:
            outcome = json.loads(text)
            outcome["report"]["evidence"] |= {"e\u0301": 1, "\u00e9": 2}
            con.execute(
                "UPDATE reps SET outcome_json = ? WHERE rowid = ?", (json.dumps(outcome), rowid)
            )
    again = tmp_path / "sssa-again"
    result = assay("attest", "export", "--db", str(db), payload["round_id"], "--out", str(again))
    assert "keys collide after NFC normalisation" in result.stderr
    (skipped,) = json.loads((again / "skipped.json").read_text())
    assert (skipped["agent_hash"], skipped["task_id"]) == (agent, task_id)
    assert len([p for p in again.rglob("*.json") if p.name != "skipped.json"]) == 2 * 2 - 1
