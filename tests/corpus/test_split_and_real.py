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
        on_disk = sorted(f"packages/{p.name}" for p in (REAL / part / "packages").iterdir())
        assert on_disk == recorded["parts"][part]
