from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from assay.cli import _register, app
from assay.corpus.validate import validate_corpus

MakeTask = Callable[..., Path]


def _balanced(make_task: MakeTask, track: str = "skills") -> None:
    make_task(track, "m1", "malicious")
    make_task(track, "s1", "safe")


def _messages(root: Path) -> list[str]:
    return [str(p) for p in validate_corpus(root).problems]


def test_balanced_corpus_is_valid(make_task: MakeTask, tmp_path: Path) -> None:
    _balanced(make_task)
    report = validate_corpus(tmp_path / "corpus")
    assert report.ok, report.problems
    assert report.counts and next(iter(report.counts.values())).total == 2


def test_unknown_label_is_reported_not_skipped(make_task: MakeTask, tmp_path: Path) -> None:
    _balanced(make_task)
    make_task("skills", "odd", "benign")
    messages = _messages(tmp_path / "corpus")
    assert any("odd/label.json" in m and "unknown label 'benign'" in m for m in messages)


def test_single_class_track(make_task: MakeTask, tmp_path: Path) -> None:
    make_task("packages", "a", "safe")
    make_task("packages", "b", "safe")
    assert any("single-class track" in m for m in _messages(tmp_path / "corpus"))


def test_split_past_70_30(make_task: MakeTask, tmp_path: Path) -> None:
    for i in range(8):
        make_task("skills", f"m{i}", "malicious")
    make_task("skills", "s0", "safe")
    make_task("skills", "s1", "safe")
    assert any("past 70/30" in m for m in _messages(tmp_path / "corpus"))


def test_absolute_and_escaping_label_paths(make_task: MakeTask, tmp_path: Path) -> None:
    _balanced(make_task)
    finding = {"category": "c", "title": "t", "plane": "action"}
    make_task("skills", "abs", "malicious", expected_findings=[{**finding, "file": "/etc/passwd"}])
    make_task("skills", "dots", "safe", expected_findings=[{**finding, "file": "../x.py"}])
    messages = _messages(tmp_path / "corpus")
    assert any("abs/label.json" in m and "absolute" in m for m in messages)
    assert any("dots/label.json" in m and "'..'" in m for m in messages)


def test_zip_slip_member_inside_artifact(make_task: MakeTask, tmp_path: Path) -> None:
    _balanced(make_task)
    task = make_task("skills", "zipped", "malicious")
    with zipfile.ZipFile(task / "artifact" / "bundle.zip", "w") as archive:
        archive.writestr("../../evil.sh", "rm -rf ~")
    assert any("bundle.zip" in m and "evil.sh" in m for m in _messages(tmp_path / "corpus"))


def test_symlink_leaving_the_task(make_task: MakeTask, tmp_path: Path) -> None:
    _balanced(make_task)
    task = make_task("skills", "linked", "malicious")
    os.symlink("/etc/passwd", task / "artifact" / "passwd")
    os.symlink("main.py", task / "artifact" / "inside")  # stays in the task: fine
    messages = _messages(tmp_path / "corpus")
    assert [m for m in messages if "symlink" in m] == [
        f"{task / 'artifact' / 'passwd'}: symlink leaves the task: -> /etc/passwd"
    ]


def test_malformed_labels_each_reported(make_task: MakeTask, tmp_path: Path) -> None:
    _balanced(make_task)
    root = tmp_path / "corpus"
    broken = make_task("skills", "broken", "safe")
    (broken / "label.json").write_text("{not json")
    make_task("skills", "wrongtrack", "safe", track_override=1)
    make_task("skills", "badfinding", "malicious", expected_findings=[{"category": "c"}])
    (root / "skills" / "nolabel" / "artifact").mkdir(parents=True)
    (root / "skills" / "stray.txt").write_text("")
    (root / "widgets").mkdir()
    messages = _messages(root)
    assert any("broken/label.json" in m and "not a valid label" in m for m in messages)
    assert any(
        "wrongtrack/label.json" in m and "unknown key 'track_override'" in m for m in messages
    )
    assert any("badfinding" in m and "title" in m for m in messages)
    assert any("badfinding" in m and "plane" in m for m in messages)
    assert any("nolabel/label.json" in m and "missing label.json" in m for m in messages)
    assert any("stray.txt" in m and "not a task directory" in m for m in messages)
    assert not any("widgets" in m for m in messages)


def test_a_folder_that_is_not_a_track_is_ignored_and_said(
    make_task: MakeTask, tmp_path: Path
) -> None:
    """A README's images or a build script's folder beside the tracks is no part of the
    corpus: validation ignores it and says so, and the corpus is valid."""
    root = tmp_path / "corpus"
    make_task("skills", "bad", "malicious")
    make_task("skills", "good", "safe")
    (root / "images").mkdir()
    (root / "images" / "shot.png").write_bytes(b"png")
    _register()
    result = CliRunner().invoke(app, ["corpus", "validate", str(root)])
    assert result.exit_code == 0, result.output
    assert "images/: not a track folder" in result.output


def test_repository_ground_truth_checked(make_task: MakeTask, tmp_path: Path) -> None:
    vuln = {"file": "app.py", "line": 1, "cwe": "CWE-89", "title": "sqli"}
    make_task(
        "repositories",
        "ok",
        "malicious",
        files={"app.py": "q()\n"},
        ground_truth={"vulnerabilities": [vuln]},
    )
    make_task("repositories", "clean", "safe")
    make_task(
        "repositories",
        "past-end",
        "malicious",
        files={"app.py": "q()\n"},
        ground_truth={"vulnerabilities": [{**vuln, "line": 40}]},
    )
    make_task(
        "repositories",
        "bad-cwe",
        "malicious",
        files={"app.py": "q()\n"},
        ground_truth={"vulnerabilities": [{**vuln, "cwe": "89"}]},
    )
    make_task("repositories", "empty", "malicious")
    messages = _messages(tmp_path / "corpus")
    assert not any("/ok/" in m or "/clean/" in m for m in messages)
    assert any("past-end" in m and "past the end" in m for m in messages)
    assert any("bad-cwe" in m and "CWE-89" in m for m in messages)
    assert any("empty" in m and "at least one vulnerability" in m for m in messages)


def test_cli_lists_problems_and_exits_nonzero(make_task: MakeTask, tmp_path: Path) -> None:
    make_task("skills", "a", "wat")
    _register()
    result = CliRunner().invoke(app, ["corpus", "validate", str(tmp_path / "corpus")])
    assert result.exit_code == 1
    assert "unknown label 'wat'" in result.output
    bundled = Path(__file__).resolve().parents[2] / "corpus"
    good = CliRunner().invoke(app, ["corpus", "validate", str(bundled)])
    assert good.exit_code == 0, good.output
    assert "corpus is valid" in good.output
