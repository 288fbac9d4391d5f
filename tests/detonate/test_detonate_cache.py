"""The detonation cache: an artifact is detonated once a day, complete results only."""

from __future__ import annotations

import datetime
import os
import threading
from pathlib import Path

import pytest
from filelock import FileLock

from assay.detonate import cache as cache_module
from assay.detonate.cache import ENVIRONMENT, DetonationCache, entry_key
from assay.mechanism.spec import Track
from assay.records.observed import UNTRUSTED_NOTE, Observed

DIGEST = "ab" * 32
TODAY = datetime.date(2026, 12, 2)


def observed(*interference: str) -> Observed:
    return Observed(
        track=Track.SKILLS,
        capabilities=(),
        gated={},
        profiles=(),
        events={},
        notes=("seen",),
        complete=not interference,
        interference=interference,
        untrusted=UNTRUSTED_NOTE,
    )


class Detonator:
    """Counts the detonations the cache asked for."""

    def __init__(self, result: Observed) -> None:
        self.result = result
        self.calls = 0

    def __call__(self) -> Observed:
        self.calls += 1
        return self.result


def test_a_complete_detonation_is_read_back_not_run_again(tmp_path: Path) -> None:
    cache = DetonationCache(tmp_path / "kept")
    run = Detonator(observed())
    first = cache.observe(Track.SKILLS, DIGEST, run)
    again = cache.observe(Track.SKILLS, DIGEST, run)
    assert run.calls == 1 and again == first
    assert cache.observe(Track.MCP_SERVERS, DIGEST, run) == first
    assert run.calls == 2  # another track is another detonation


def test_an_incomplete_detonation_is_run_again(tmp_path: Path) -> None:
    cache = DetonationCache(tmp_path)
    run = Detonator(observed("baseline: stopped by the CPU limit"))
    cache.observe(Track.SKILLS, DIGEST, run)
    cache.observe(Track.SKILLS, DIGEST, run)
    assert run.calls == 2
    assert not list(tmp_path.glob("*.json"))


def test_a_damaged_entry_is_a_miss_and_is_replaced(tmp_path: Path) -> None:
    cache = DetonationCache(tmp_path)
    run = Detonator(observed())
    cache.observe(Track.SKILLS, DIGEST, run)
    (entry,) = tmp_path.glob("*.json")
    entry.write_bytes(b'{"track": "skills", "complete": tr')
    assert cache.observe(Track.SKILLS, DIGEST, run) == observed()
    assert run.calls == 2
    assert cache.observe(Track.SKILLS, DIGEST, run) == observed() and run.calls == 2


def test_the_key_is_the_day_the_track_and_the_artifact() -> None:
    key = entry_key(Track.SKILLS, DIGEST, TODAY)
    assert key == entry_key(Track.SKILLS, DIGEST, TODAY)
    assert key != entry_key(Track.SKILLS, DIGEST, TODAY + datetime.timedelta(days=1))
    assert key != entry_key(Track.PACKAGES, DIGEST, TODAY)
    assert key != entry_key(Track.SKILLS, "cd" * 32, TODAY)


def test_validators_sharing_the_cache_detonate_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first detonation ends only once the second validator has been refused the
    # entry's lock: it then waits, and reads the entry instead of detonating again.
    started, refused = threading.Event(), threading.Event()

    class SeenLock(FileLock):
        def _acquire(self) -> None:
            super()._acquire()
            if not self.is_locked:
                refused.set()

    monkeypatch.setattr(cache_module, "FileLock", SeenLock)
    cache = DetonationCache(tmp_path)
    calls: list[int] = []

    def slow() -> Observed:
        calls.append(1)
        started.set()
        assert refused.wait(10), "the second validator was never kept out"
        return observed()

    results: list[Observed] = []
    threads = [
        threading.Thread(target=lambda: results.append(cache.observe(Track.SKILLS, DIGEST, slow)))
        for _ in range(2)
    ]
    threads[0].start()
    started.wait(10)
    threads[1].start()
    for thread in threads:
        thread.join(20)
    assert len(calls) == 1 and results == [observed(), observed()]


def test_entries_of_past_days_are_removed(tmp_path: Path) -> None:
    cache = DetonationCache(tmp_path)
    old = tmp_path / "0000.json"
    old.write_text("{}")
    os.utime(old, (0, 0))
    cache.observe(Track.SKILLS, DIGEST, Detonator(observed()))
    assert not old.exists() and len(list(tmp_path.glob("*.json"))) == 1


def test_the_environment_names_the_cache_or_turns_it_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(ENVIRONMENT, "off")
    assert DetonationCache.configured() is None
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "mine"))
    named = DetonationCache.configured()
    assert named is not None and named.root == tmp_path / "mine"
    monkeypatch.delenv(ENVIRONMENT)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    configured = DetonationCache.configured()
    assert configured is not None and configured.root == tmp_path / "xdg/assay/detonations"
