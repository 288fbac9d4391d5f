"""The seeded split, and the bundled real-provenance corpus it made."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.corpus.interface import CorpusError, Label
from assay.corpus.native import NativeCorpus
from assay.corpus.split import SET_ASIDE, SPLIT_FILE, TUNING, plan_split, write_split
from assay.corpus.validate import validate_corpus
from assay.mechanism.spec import Track

MakeTask = Callable[..., Path]
REAL = Path(__file__).resolve().parents[2] / "corpus-real"


def _corpus(make_task: MakeTask, root: Path) -> Path:
    for n in range(12):
        make_task("packages", f"m{n:02}", "malicious", root=root, source={"ecosystem": "pypi"})
        make_task("packages", f"s{n:02}", "safe", root=root, source={"registry": "npm"})
    return root


def test_split_is_seeded_stratified_and_recorded(make_task: MakeTask, tmp_path: Path) -> None:
    src = _corpus(make_task, tmp_path / "whole")
    split = write_split(src, tmp_path / "split", "seed-a")
    assert split == plan_split(NativeCorpus(src), "seed-a")  # same seed, same split
    assert split != plan_split(NativeCorpus(src), "seed-b")
    for part in (TUNING, SET_ASIDE):
        tasks = NativeCorpus(tmp_path / "split" / part).tasks(Track.PACKAGES)
        assert sum(t.malicious for t in tasks) == 6 and len(tasks) == 12
        assert validate_corpus(tmp_path / "split" / part).ok
    recorded = json.loads((tmp_path / "split" / SPLIT_FILE).read_text())
    assert recorded["seed"] == "seed-a" and recorded["parts"] == split.parts
    with pytest.raises(CorpusError, match="must not exist"):
        write_split(src, tmp_path / "split", "seed-a")


def test_adding_a_task_moves_no_other(make_task: MakeTask, tmp_path: Path) -> None:
    src = _corpus(make_task, tmp_path / "whole")
    before = plan_split(NativeCorpus(src), "s")
    shutil.copytree(src / "packages" / "m00", src / "packages" / "m99")
    after = plan_split(NativeCorpus(src), "s")
    moved = [n for part in before.parts for n in before.parts[part] if n not in after.parts[part]]
    assert moved == []


@pytest.mark.parametrize("part", [TUNING, SET_ASIDE])
def test_bundled_real_corpus_validates_and_keeps_malware_sealed(part: str) -> None:
    report = validate_corpus(REAL / part)
    assert report.ok, "\n".join(map(str, report.problems))
    tasks = NativeCorpus(REAL / part).tasks(Track.PACKAGES)
    assert len(tasks) >= 20
    for task in tasks:
        assert task.source["synthetic"] is False and task.archive is not None
        for key in ("package", "version", "archive_sha256"):
            assert task.source[key], (task.task_id, key)
        if task.label is Label.MALICIOUS:
            # Sealed: the one file at rest is the encrypted zip, never the sample itself.
            assert task.archive.password and task.archive.file.endswith(".zip")
            assert [p.name for p in task.artifact_dir.iterdir()] == [task.archive.file]
            assert {"dataset", "commit", "path"} <= set(task.source)


def test_bundled_real_split_is_the_recorded_one() -> None:
    recorded = json.loads((REAL / SPLIT_FILE).read_text())
    for part in (TUNING, SET_ASIDE):
        on_disk = sorted(
            f"{track.name}/{task.name}"
            for track in (REAL / part).iterdir()
            for task in track.iterdir()
        )
        assert on_disk == recorded["parts"][part]


def test_bundled_real_repositories_follow_the_seeded_split(tmp_path: Path) -> None:
    """The repositories tasks sit in the part the recorded seed gave them under the ids
    they were split by (split.json records each later rename)."""
    recorded = json.loads((REAL / SPLIT_FILE).read_text())
    split_as = {new: old for old, new in recorded["renamed"]["ids"].items()}
    for part in (TUNING, SET_ASIDE):
        for task in (REAL / part / "repositories").iterdir():
            old = split_as.get(f"repositories/{task.name}", f"repositories/{task.name}")
            shutil.copytree(task, tmp_path / old)
    planned = plan_split(NativeCorpus(tmp_path), recorded["seed"], recorded["set_aside_share"])
    for part in (TUNING, SET_ASIDE):
        ours = [n for n in recorded["parts"][part] if n.startswith("repositories/")]
        assert sorted(planned.parts[part]) == sorted(split_as.get(n, n) for n in ours)


def test_bundled_real_task_ids_do_not_tell_the_label() -> None:
    """A task id is read by whoever reads a round: it names the artifact, never the
    dataset it came from nor its class."""
    telling = ("malregistry", "osv-", "datadog", "cve-", "clean-", "malicious", "benign")
    for part in (TUNING, SET_ASIDE):
        for track in (REAL / part).iterdir():
            for task in track.iterdir():
                assert not any(word in task.name for word in telling), task


@pytest.mark.parametrize("part", [TUNING, SET_ASIDE])
def test_bundled_real_repositories_point_at_the_lines_real_fixes_changed(part: str) -> None:
    tasks = NativeCorpus(REAL / part).tasks(Track.REPOSITORIES)
    assert len(tasks) >= 6
    assert {t.label for t in tasks} == {Label.MALICIOUS, Label.SAFE}
    for task in tasks:
        source = task.source
        assert source["synthetic"] is False and len(source["commit"]) == 40, task.task_id
        # Only the named files and the project's licence, as they were at that commit.
        files = sorted(
            p.relative_to(task.artifact_dir).as_posix()
            for p in task.artifact_dir.rglob("*")
            if p.is_file()
        )
        assert files == sorted([*source["paths"], source["licence_file"]]), task.task_id
        fixed = {(f["file"], f["cve"]) for f in source["fixes"]}
        assert all(len(f["commit"]) == 40 and f["fixed_lines"] for f in source["fixes"])
        if task.label is Label.SAFE:
            assert not task.vulnerabilities and source["clean_because"], task.task_id
            continue
        assert task.vulnerabilities and len(fixed) <= len(task.vulnerabilities)
        for vuln in task.vulnerabilities:
            lines = (task.artifact_dir / vuln.file).read_text(encoding="utf-8").splitlines()
            assert vuln.file in source["paths"] and vuln.cwe.startswith("CWE-")
            assert 1 <= vuln.line <= len(lines) and lines[vuln.line - 1].strip(), task.task_id


@pytest.mark.parametrize("part", [TUNING, SET_ASIDE])
@pytest.mark.parametrize("track", [Track.SKILLS, Track.MCP_SERVERS])
def test_bundled_real_skills_and_mcp_servers_are_sealed_with_provenance(
    part: str, track: Track
) -> None:
    """Over 40 real tasks per track across the parts (about 20 per part), each one folder
    of a public repository at a commit; the malicious ones sealed."""
    tasks = NativeCorpus(REAL / part).tasks(track)
    assert len(tasks) >= 20
    for task in tasks:
        assert task.source["synthetic"] is False and task.archive is not None
        assert len(task.source["commit"]) == 40 and task.source["repository"], task.task_id
        if task.label is Label.MALICIOUS:
            assert task.archive.password and task.archive.file.endswith(".zip")
            assert [p.name for p in task.artifact_dir.iterdir()] == [task.archive.file]
