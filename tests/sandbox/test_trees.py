"""Recording a tree the sandbox could write: what each entry is, never through a link,
and within caps that say which one was reached."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from assay.sandbox.trees import TreeCaps, record_tree


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_each_entry_has_its_kind_mode_and_content(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir(mode=0o700)
    (tmp_path / "d" / "f").write_bytes(b"abc")
    os.chmod(tmp_path / "d" / "f", 0o640)
    (tmp_path / "link").symlink_to("d/f")
    os.mkfifo(tmp_path / "fifo")  # never opened: recording it cannot block
    tree = record_tree(str(tmp_path))
    assert tree.cut == ""
    entries = tree.entries
    assert set(entries) == {"d", "d/f", "link", "fifo"}
    assert (entries["d"].kind, entries["d"].mode) == ("dir", 0o700)
    assert (entries["d/f"].kind, entries["d/f"].mode, entries["d/f"].digest) == (
        "file",
        0o640,
        sha(b"abc"),
    )
    assert (entries["link"].kind, entries["link"].digest) == ("symlink", sha(b"d/f"))
    assert entries["fifo"].kind == "other"


def test_a_link_is_never_followed(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret").write_bytes(b"host secret")
    (tmp_path / "dir-link").symlink_to(outside)
    (tmp_path / "file-link").symlink_to(outside / "secret")
    tree = record_tree(str(tmp_path))
    assert set(tree.entries) == {"dir-link", "file-link"}  # nothing of what they point at
    assert {e.kind for e in tree.entries.values()} == {"symlink"}


def test_a_root_that_is_a_link_or_missing(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_bytes(b"x")
    (tmp_path / "alias").symlink_to("real")
    assert record_tree(str(tmp_path / "missing")).entries == {}
    assert record_tree(str(tmp_path / "missing")).cut == ""
    linked = record_tree(str(tmp_path / "alias"))
    assert linked.entries == {} and "cannot be opened" in linked.cut


def test_a_change_of_content_mode_or_kind_makes_another_entry(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"one")
    before = record_tree(str(tmp_path)).entries["f"]
    (tmp_path / "f").write_bytes(b"one")  # rewritten the same: equal, but changed since
    same = record_tree(str(tmp_path)).entries["f"]
    assert same == before and same.changed_ns >= before.changed_ns
    os.chmod(tmp_path / "f", 0o600)
    assert record_tree(str(tmp_path)).entries["f"] != before
    (tmp_path / "f").unlink()
    (tmp_path / "f").symlink_to("one")
    assert record_tree(str(tmp_path)).entries["f"].kind == "symlink"


@pytest.mark.parametrize(
    ("caps", "reason"),
    [
        (TreeCaps(entries=3), "more than 3 entries"),
        (TreeCaps(depth=2), "deeper than 2 levels"),
        (TreeCaps(hashed_bytes=5), "more than 5 bytes of files to hash"),
    ],
)
def test_a_cap_reached_cuts_the_record_and_says_which(
    tmp_path: Path, caps: TreeCaps, reason: str
) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "f").write_bytes(b"0123456789")
    (tmp_path / "g").write_bytes(b"x")
    tree = record_tree(str(tmp_path), caps)
    assert reason in tree.cut


def test_a_sparse_file_larger_than_the_cap_is_not_read(tmp_path: Path) -> None:
    with (tmp_path / "huge").open("wb") as handle:
        handle.truncate(1 << 40)  # a terabyte of holes
    tree = record_tree(str(tmp_path), TreeCaps(hashed_bytes=1 << 20))
    assert "bytes of files to hash" in tree.cut


def test_a_name_that_is_no_utf8_is_recorded_as_text_that_encodes(tmp_path: Path) -> None:
    os.mkdir(os.path.join(os.fsencode(tmp_path), b"d\xff"))
    with open(os.path.join(os.fsencode(tmp_path), b"d\xff", b"f"), "wb") as handle:
        handle.write(b"x")
    tree = record_tree(str(tmp_path))
    assert set(tree.entries) == {"d\\xff", "d\\xff/f"}
    assert all(name.encode("utf-8") for name in tree.entries)
