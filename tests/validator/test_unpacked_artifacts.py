"""A Ray worker's unpacked artifacts: reused by digest, bounded, verified, swept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from assay.corpus.interface import artifact_digest
from assay.sandbox import InfrastructureError
from assay.sandbox.owners import owner_tag
from assay.validator.executors.ray import UnpackedArtifacts, pack


def _artifact(tmp_path: Path, name: str, text: str) -> tuple[bytes, str]:
    root = tmp_path / "sources" / name
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text(text)
    return pack(root), artifact_digest(root)


def _folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.name.startswith("assay-artifacts-"))


def test_a_second_rep_of_an_artifact_reuses_its_tree(tmp_path: Path) -> None:
    tar, digest = _artifact(tmp_path, "a", "hello")
    cache = UnpackedArtifacts(tmp_path / "work")
    (tmp_path / "work").mkdir()
    first = cache.tree(tar, digest)
    # Not unpacked again: bytes that are no tar at all still find the tree.
    assert cache.tree(b"not a tar", digest) == first
    assert (first / "SKILL.md").read_text() == "hello"
    [folder] = _folders(tmp_path / "work")
    assert len(list(folder.iterdir())) == 1


def test_past_its_size_the_least_recently_used_tree_is_removed(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    shipped = [_artifact(tmp_path, name, name * 100) for name in "abc"]
    cache = UnpackedArtifacts(tmp_path / "work", max_bytes=2 * len(shipped[0][0]))
    a, b = (cache.tree(*item) for item in shipped[:2])
    cache.tree(*shipped[0])  # a is used again, so b is the oldest
    c = cache.tree(*shipped[2])
    assert a.exists() and c.exists() and not b.parent.exists()
    assert cache.tree(*shipped[1]).exists()  # unpacked again


def test_a_tree_that_does_not_match_its_digest_is_refused_and_not_kept(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    tar, _ = _artifact(tmp_path, "a", "hello")
    _, other = _artifact(tmp_path, "b", "bye")
    cache = UnpackedArtifacts(tmp_path / "work")
    with pytest.raises(InfrastructureError, match="does not match"):
        cache.tree(tar, other)
    [folder] = _folders(tmp_path / "work")
    assert list(folder.iterdir()) == []
    assert cache.tree(tar, artifact_digest(tmp_path / "sources" / "a")).exists()


def test_the_first_use_removes_dead_workers_folders_and_keeps_live_ones(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    dead = owner_tag(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    live = owner_tag(1)
    for tag in (dead, live):
        (work / f"assay-artifacts-{tag}.x1" / "0" / "artifact").mkdir(parents=True)
    cache = UnpackedArtifacts(work)
    cache.tree(*_artifact(tmp_path, "a", "hello"))
    dead_left, live_left, ours = (
        [p for p in _folders(work) if p.name.startswith(f"assay-artifacts-{tag}.")]
        for tag in (dead, live, owner_tag())
    )
    assert (dead_left, len(live_left), len(ours)) == ([], 1, 1)


def test_a_folder_someone_put_under_the_workers_name_is_not_used(tmp_path: Path) -> None:
    work = tmp_path / "work"
    planted = work / f"assay-artifacts-{owner_tag()}"
    planted.mkdir(parents=True)
    tree = UnpackedArtifacts(work).tree(*_artifact(tmp_path, "a", "hello"))
    assert planted not in tree.parents and list(planted.iterdir()) == []
