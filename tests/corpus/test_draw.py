from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.corpus.interface import Label, Task
from assay.mechanism.draw import draw_tasks
from assay.mechanism.spec import Track


def _tasks(ids: list[str], track: Track = Track.SKILLS) -> list[Task]:
    return [Task(track, i, Label.SAFE, Path("/nowhere")) for i in ids]


def test_draw_recomputed_by_hand() -> None:
    """The documented algorithm, written out independently of the module."""
    ids = [f"task-{i:02d}" for i in range(20)]
    seed = hashlib.sha256(b"ab12:validator-7").hexdigest()

    def key(task_id: str) -> tuple[str, str]:
        return hashlib.sha256(f"{seed}:skills:{task_id}".encode()).hexdigest(), task_id

    expected = sorted(ids, key=key)[:5]
    drawn = draw_tasks(
        _tasks(ids), track=Track.SKILLS, round_seed="ab12", validator_id="validator-7", count=5
    )
    assert [t.task_id for t in drawn] == expected


@given(st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=30), st.integers(0, 40))
def test_draw_ignores_input_order_and_caps_count(ids: list[str], count: int) -> None:
    forward = draw_tasks(
        _tasks(ids), track=Track.SKILLS, round_seed="s", validator_id="v", count=count
    )
    backward = draw_tasks(
        _tasks(ids[::-1]), track=Track.SKILLS, round_seed="s", validator_id="v", count=count
    )
    assert forward == backward
    assert len(forward) == min(count, len(ids))


def test_validators_draw_differently_and_other_tracks_are_ignored() -> None:
    tasks = _tasks([f"t{i}" for i in range(50)]) + _tasks(["p1"], Track.PACKAGES)
    a = draw_tasks(tasks, track=Track.SKILLS, round_seed="r", validator_id="a", count=10)
    b = draw_tasks(tasks, track=Track.SKILLS, round_seed="r", validator_id="b", count=10)
    assert a != b
    assert all(t.track is Track.SKILLS for t in a + b)


def test_duplicate_ids_refused() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        draw_tasks(
            _tasks(["x", "x"]), track=Track.SKILLS, round_seed="r", validator_id="v", count=1
        )
