from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest

from assay.corpus import native
from assay.corpus.interface import CorpusError, Label, artifact_digest
from assay.corpus.native import MAX_LABEL_ENTRIES, NativeCorpus
from assay.mechanism.spec import Track
from assay.schema.mechanism_file import pinned

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


def _planted(count: int, file: str = "main.py") -> dict[str, object]:
    entry = {"file": file, "line": 1, "cwe": "CWE-78", "title": "command injection"}
    return {"vulnerabilities": [entry] * count}


def test_a_label_lists_at_most_as_many_entries_as_a_report_holds(
    make_task: MakeTask, tmp_path: Path
) -> None:
    assert pinned().max_items_per_report == MAX_LABEL_ENTRIES
    make_task("repositories", "r-ok", "malicious", ground_truth=_planted(MAX_LABEL_ENTRIES))
    make_task("repositories", "r-safe", "safe")
    assert len(NativeCorpus(tmp_path / "corpus").tasks(Track.REPOSITORIES)) == 2
    make_task("repositories", "r-many", "malicious", ground_truth=_planted(1_000))
    with pytest.raises(CorpusError, match=r"lists 1000 entries; at most 64"):
        NativeCorpus(tmp_path / "corpus").tasks(Track.REPOSITORIES)


def test_each_planted_file_is_read_once_however_many_entries_point_into_it(
    make_task: MakeTask, tmp_path: Path
) -> None:
    make_task("repositories", "r-1", "malicious", ground_truth=_planted(MAX_LABEL_ENTRIES))
    make_task("repositories", "r-2", "safe")
    # A spy: the real reader runs, and each call is counted.
    with mock.patch("assay.corpus.native.read_capped", wraps=native.read_capped) as read:
        NativeCorpus(tmp_path / "corpus").tasks(Track.REPOSITORIES)
    line_scans = [c for c in read.call_args_list if c.args[0].name == "main.py"]
    assert len(line_scans) == 1
