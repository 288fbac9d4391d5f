"""scripts/build_real_repositories.py on a small git history the test makes: a vulnerable
file, its fix, and a label that points only at a line the fix changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.corpus.interface import Label
from assay.corpus.native import NativeCorpus
from assay.corpus.validate import validate_corpus
from assay.mechanism.spec import Track

BUILDER = Path(__file__).resolve().parents[2] / "scripts" / "build_real_repositories.py"
VULNERABLE = "import os\n\n\ndef fetch(url):\n    os.system(f'git clone {url}')\n"
FIXED = "import subprocess\n\n\ndef fetch(url):\n    subprocess.check_call(['git', 'clone', url])\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def mirrors(tmp_path: Path) -> Path:
    repo = tmp_path / "mirrors" / "someone+tool" / "repo"
    (repo / "tool").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "curator@example.invalid")
    _git(repo, "config", "user.name", "curator")
    (repo / "LICENSE").write_text("MIT\n")
    (repo / "README.md").write_text("not copied\n")
    (repo / "tool" / "fetch.py").write_text(VULNERABLE)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "first")
    (repo / "tool" / "fetch.py").write_text(FIXED)
    _git(repo, "commit", "-qam", "fix command injection")
    return tmp_path / "mirrors"


def _build(tmp_path: Path, mirrors: Path, match: str) -> subprocess.CompletedProcess[str]:
    fix = _git(mirrors / "someone+tool" / "repo", "rev-parse", "HEAD")
    vuln: dict[str, Any] = {
        "cve": "CVE-2000-0001",
        "fix_commit": fix,
        "file": "tool/fetch.py",
        "match": match,
        "cwe": "CWE-78",
        "title": "Command injection",
        "description": "The URL is formatted into a shell command.",
    }
    tasks = [
        {
            "id": "cve-tool",
            "repository": "someone/tool",
            "commit": f"{fix}^1",
            "files": ["tool/fetch.py"],
            "notes": "before the fix",
            "vulnerabilities": [vuln],
        },
        {
            "id": "clean-tool",
            "repository": "someone/tool",
            "commit": fix,
            "files": ["tool/fetch.py"],
            "clean_because": "after the fix",
            "notes": "after the fix",
        },
    ]
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps({"tasks": tasks}))
    return subprocess.run(
        [sys.executable, str(BUILDER), str(sources), str(mirrors), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )


def test_a_planted_vulnerability_is_the_line_the_fix_changed(tmp_path: Path, mirrors: Path) -> None:
    done = _build(tmp_path, mirrors, "os.system(")
    assert done.returncode == 0, done.stderr
    corpus = tmp_path / "out"
    assert validate_corpus(corpus).ok
    tasks = {t.task_id: t for t in NativeCorpus(corpus).tasks(Track.REPOSITORIES)}
    vulnerable, clean = tasks["cve-tool"], tasks["clean-tool"]
    assert vulnerable.label is Label.MALICIOUS and clean.label is Label.SAFE
    (planted,) = vulnerable.vulnerabilities
    assert (planted.file, planted.line, planted.cwe) == ("tool/fetch.py", 5, "CWE-78")
    # Only the named file and the licence, as they were at each commit.
    assert (vulnerable.artifact_dir / "tool" / "fetch.py").read_text() == VULNERABLE
    assert (clean.artifact_dir / "tool" / "fetch.py").read_text() == FIXED
    assert sorted(p.name for p in vulnerable.artifact_dir.iterdir()) == ["LICENSE", "tool"]
    (fix,) = vulnerable.source["fixes"]
    assert fix["fixed_lines"] == [1, 5] and fix["cve"] == "CVE-2000-0001"
    assert vulnerable.source["synthetic"] is False and not clean.vulnerabilities


def test_a_line_the_fix_did_not_touch_is_refused(tmp_path: Path, mirrors: Path) -> None:
    done = _build(tmp_path, mirrors, "def fetch(url):")
    assert done.returncode != 0 and "is not a line" in done.stderr
