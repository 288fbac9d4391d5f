from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.corpus.interface import CorpusError, Label, artifact_digest
from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import Track

MakeTask = Callable[..., Path]


def test_loads_tasks_sorted_with_labels(make_task: MakeTask, tmp_path: Path) -> None:
    make_task(
        "skills",
        "b-task",
        "malicious",
        expected_capabilities=["READ_SSH_KEY"],
        expected_findings=[{"category": "x", "title": "t", "plane": "action", "line": 1}],
    )
    make_task("skills", "a-task", "safe")
    tasks = NativeCorpus(tmp_path / "corpus").tasks(Track.SKILLS)
    assert [t.task_id for t in tasks] == ["a-task", "b-task"]
    assert tasks[1].label is Label.MALICIOUS
    assert tasks[1].expected_capabilities == ("READ_SSH_KEY",)
    assert tasks[1].expected_findings[0].line == 1
    assert NativeCorpus(tmp_path / "corpus").tasks(Track.PACKAGES) == ()


def test_strict_loader_raises_with_every_problem(make_task: MakeTask, tmp_path: Path) -> None:
    make_task("skills", "bad-1", "evil")
    make_task("skills", "bad-2", "safe", expected_capabilities=["READ_SECRETS"])
    with pytest.raises(CorpusError) as excinfo:
        NativeCorpus(tmp_path / "corpus").tasks(Track.SKILLS)
    assert "bad-1" in str(excinfo.value) and "'evil'" in str(excinfo.value)
    assert "bad-2" in str(excinfo.value) and "READ_SECRET'" in str(excinfo.value)


def test_digest_is_exactly_the_documented_algorithm(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.txt").write_bytes(b"xx")
    (tmp_path / "a.py").write_bytes(b"")
    expected = hashlib.sha256()
    expected.update(b"a.py\0" + (0).to_bytes(8, "big"))
    expected.update(b"b/x.txt\0" + (2).to_bytes(8, "big") + b"xx")
    assert artifact_digest(tmp_path) == expected.hexdigest()


def test_digest_changes_with_content_and_name(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"1")
    first = artifact_digest(tmp_path)
    (tmp_path / "f").write_bytes(b"2")
    second = artifact_digest(tmp_path)
    (tmp_path / "f").rename(tmp_path / "g")
    assert len({first, second, artifact_digest(tmp_path)}) == 3


def test_a_planted_vulnerability_keeps_the_alternatives_its_curator_accepts(
    make_task: MakeTask, tmp_path: Path
) -> None:
    planted = {"file": "main.py", "line": 1, "cwe": "CWE-78", "title": "command injection"}
    make_task(
        "repositories",
        "r-1",
        "malicious",
        ground_truth={"vulnerabilities": [{**planted, "all_cwes": ["CWE-77", "CWE-88"]}]},
    )
    make_task("repositories", "r-2", "safe")
    (task, _) = NativeCorpus(tmp_path / "corpus").tasks(Track.REPOSITORIES)
    assert task.planted_items()[0].all_cwes == ("CWE-77", "CWE-88")
    make_task(
        "repositories",
        "r-3",
        "malicious",
        ground_truth={"vulnerabilities": [{**planted, "all_cwes": "CWE-77"}]},
    )
    with pytest.raises(CorpusError, match=r"all_cwes must be a list"):
        NativeCorpus(tmp_path / "corpus").tasks(Track.REPOSITORIES)
