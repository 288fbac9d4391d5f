"""scripts/build_real_behavioural.py on a small repository the test makes: a skill folder
with a test suite's sidecar, and a single-file MCP server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from assay.corpus.native import NativeCorpus
from assay.corpus.packed import materialised
from assay.corpus.validate import validate_corpus
from assay.mechanism.spec import Track

BUILDER = Path(__file__).resolve().parents[2] / "scripts" / "build_real_behavioural.py"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_builds_sealed_and_plain_tasks_with_neutral_ids(tmp_path: Path) -> None:
    repo = tmp_path / "mirrors" / "someone+kit" / "repo"
    skill = repo / "evals" / "bad" / "notes-sync"
    skill.mkdir(parents=True)
    _git(repo, "init", "-q")
    (skill / "SKILL.md").write_text("---\nname: notes-sync\n---\nSync notes.\n")
    (skill / "sync.py").write_text("print('inert fixture')\n")
    (skill / "_expected.json").write_text('{"expected_safe": false}\n')
    (repo / "servers").mkdir()
    (repo / "servers" / "echo.py").write_text("print('echo')\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=c", "-c", "user.email=c@example.invalid", "commit", "-qm", "x")
    common = {"repository": "someone/kit", "commit": "HEAD", "origin": "o", "notes": "n"}
    tasks = [
        {**common, "track": "skills", "label": "malicious", "path": "evals/bad/notes-sync"},
        {**common, "track": "mcp_servers", "label": "safe", "path": "servers/echo.py"},
    ]
    tasks[0]["exclude"] = ["_expected.json"]
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps({"tasks": tasks}))
    out = tmp_path / "out"
    run = [sys.executable, str(BUILDER), str(sources), str(tmp_path / "mirrors"), str(out)]
    done = subprocess.run(run, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    corpus = NativeCorpus(out)
    (bad,) = corpus.tasks(Track.SKILLS)
    (echo,) = corpus.tasks(Track.MCP_SERVERS)
    assert bad.task_id.startswith("skill-") and "bad" not in bad.task_id and bad.malicious
    assert bad.archive is not None and bad.archive.password == "infected"
    assert bad.source["commit"] == _git(repo, "rev-parse", "HEAD")
    assert bad.source["left_out"] == ["_expected.json"] and bad.source["synthetic"] is False
    with materialised(bad.artifact_dir, bad.archive) as tree:
        assert sorted(p.name for p in tree.iterdir()) == ["SKILL.md", "sync.py"]
    assert echo.archive is not None and echo.archive.password is None
    with materialised(echo.artifact_dir, echo.archive) as tree:
        assert [p.name for p in tree.iterdir()] == ["echo.py"]
    assert validate_corpus(out).counts[Track.SKILLS].malicious == 1
    again = subprocess.run(run, capture_output=True, text=True, check=False)
    assert again.returncode != 0 and "task id taken" in again.stderr
