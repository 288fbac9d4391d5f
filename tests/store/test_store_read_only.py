"""The store opened read-only: it reads, refuses what is not a round store, writes nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from assay.store.sqlite import SCHEMA_VERSION, Store, StoreError


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "rounds.db"
    Store(path).close()
    return path


def test_a_read_only_store_reads_and_writes_nothing(tmp_path: Path) -> None:
    path = _store(tmp_path)
    before = _digest(path)
    with Store(path, read_only=True) as store:
        assert store.summaries() == [] and store.weight_history() == ()
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store._db.execute("DELETE FROM rounds")
    assert _digest(path) == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no round store at"),
        (b"not a database at all, just bytes" * 100, "file is not a database"),
        ("CREATE TABLE other (x INTEGER)", "is not a round store"),
        (f"SCHEMA {SCHEMA_VERSION + 1}", "newer than this assay"),
    ],
)
def test_what_is_not_a_readable_store_is_refused(
    tmp_path: Path, content: bytes | str | None, message: str
) -> None:
    path = tmp_path / "rounds.db"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str) and content.startswith("SCHEMA"):
        Store(path).close()
        with sqlite3.connect(path) as db:
            db.execute("UPDATE schema_version SET version = ?", (int(content.split()[1]),))
    elif content is not None:
        with sqlite3.connect(path) as db:
            db.execute(content)
    with pytest.raises(StoreError, match=message):
        Store(path, read_only=True)
