"""Snapshots: what the round runs is a sealed copy, taken within bounds, removed once
its round is complete."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.corpus.interface import CorpusError, artifact_digest
from assay.validator.snapshot import prune_snapshots, snapshot_artifact, snapshot_root


def _artifact(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "SKILL.md").write_text("# x\n")
    (root / "sub" / "run.py").write_text("print(1)\n")
    (root / "link").symlink_to("SKILL.md")
    return root


def test_the_snapshot_is_the_artifact_sealed(tmp_path: Path) -> None:
    source = _artifact(tmp_path / "a")
    copy = tmp_path / "snap"
    digest = snapshot_artifact(source, copy)
    assert digest == artifact_digest(source) == artifact_digest(copy)
    assert os.readlink(copy / "link") == "SKILL.md"
    assert not (copy / "sub" / "run.py").stat().st_mode & 0o222
    assert not copy.stat().st_mode & 0o222


def test_a_tree_that_cannot_be_snapshotted_leaves_nothing(tmp_path: Path) -> None:
    source = _artifact(tmp_path / "a")
    os.mkfifo(source / "pipe")
    with pytest.raises(CorpusError, match="special files"):
        snapshot_artifact(source, tmp_path / "snap")
    assert not (tmp_path / "snap").exists()


def test_completed_rounds_snapshots_are_pruned_and_others_kept(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    source = _artifact(tmp_path / "a")
    for round_id in ("r1", "r2"):
        snapshot_artifact(source, snapshot_root(db, round_id) / "skills" / "t")
    assert prune_snapshots(db, lambda round_id: round_id == "r1") == ["r1"]
    assert not snapshot_root(db, "r1").exists()
    assert (snapshot_root(db, "r2") / "skills" / "t" / "SKILL.md").is_file()
