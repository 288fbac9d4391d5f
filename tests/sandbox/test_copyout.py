"""Copy-out refuses symlinks, non-regular files and oversized files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.sandbox.copyout import copy_out
from assay.sandbox.interface import CopyStatus


@pytest.fixture
def root(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield tmp_path, fd
    os.close(fd)


def test_regular_file_is_copied(root: tuple[Path, int]) -> None:
    path, fd = root
    (path / "f").write_bytes(b"abc")
    assert copy_out(fd, "f", 3).data == b"abc"


def test_symlink_is_not_followed(
    root: tuple[Path, int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path, fd = root
    target = tmp_path_factory.mktemp("elsewhere") / "secret"
    target.write_bytes(b"secret")
    (path / "link").symlink_to(target)
    copied = copy_out(fd, "link", 100)
    assert copied.status is CopyStatus.NOT_REGULAR and copied.data == b""


def test_fifo_directory_and_missing(root: tuple[Path, int]) -> None:
    path, fd = root
    os.mkfifo(path / "fifo")
    (path / "dir").mkdir()
    assert copy_out(fd, "fifo", 10).status is CopyStatus.NOT_REGULAR
    assert copy_out(fd, "dir", 10).status is CopyStatus.NOT_REGULAR
    assert copy_out(fd, "nothing", 10).status is CopyStatus.MISSING


def test_size_cap(root: tuple[Path, int]) -> None:
    path, fd = root
    (path / "big").write_bytes(b"x" * 11)
    assert copy_out(fd, "big", 10).status is CopyStatus.TOO_LARGE
    assert copy_out(fd, "big", 11).status is CopyStatus.OK


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x"])
def test_only_single_components(root: tuple[Path, int], name: str) -> None:
    with pytest.raises(ValueError):
        copy_out(root[1], name, 10)
