from __future__ import annotations

import hashlib

import pytest

from assay.mechanism.spec import SpecError, Track, parse_spec
from assay.schema.mechanism_file import pinned, pinned_bytes


def test_pinned_values_match_the_design() -> None:
    spec = pinned()
    assert [
        (t.tasks, t.reps, t.cpu_budget_s, t.threshold, t.emission_share)
        for t in spec.tracks.values()
    ] == [
        (50, 3, 8.0, 0.20, 0.225),
        (40, 3, 15.0, 0.20, 0.225),
        (30, 3, 30.0, 0.20, 0.25),
        (50, 2, 90.0, 0.50, 0.30),
    ]
    assert spec.wall_backstop_s(Track.SKILLS) == 24.0
    assert spec.round_wall_cap_s(Track.REPOSITORIES) == 2 * 50 * 2 * 90
    assert spec.sandbox.memory_bytes == 2 << 30 and spec.sandbox.pids == 256
    assert spec.top_split == (0.5, 0.3, 0.2) and spec.ema_new == 0.3
    assert spec.findings_weight == 0.25 and spec.title_overlap == 0.34 and spec.line_window == 10
    assert spec.digest == hashlib.sha256(pinned_bytes()).hexdigest()


def edited(old: str, new: str) -> bytes:
    raw = pinned_bytes().decode()
    assert old in raw
    return raw.replace(old, new, 1).encode()


def test_missing_value_names_the_key() -> None:
    with pytest.raises(SpecError, match=r"'tracks\.packages\.reps'"):
        parse_spec(edited("tasks = 30\nreps = 3\n", "tasks = 30\n"))


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("threshold = 0.50", "threshold = 1.5", "tracks.repositories.threshold"),
        ("cpu_budget_s = 8.0", 'cpu_budget_s = "fast"', "tracks.skills.cpu_budget_s"),
        ("pids = 256", "pids = true", "sandbox.pids"),
        ("top_split = [0.50, 0.30, 0.20]", "top_split = [0.5, 0.3]", "weights.top_split"),
        ('metric = "f2"', 'metric = "auc"', "tracks.repositories.metric"),
    ],
)
def test_invalid_value_names_the_key(old: str, new: str, key: str) -> None:
    with pytest.raises(SpecError, match=key.replace(".", r"\.")):
        parse_spec(edited(old, new))


def test_shares_must_sum_to_one() -> None:
    with pytest.raises(SpecError, match="emission_share"):
        parse_spec(edited("emission_share = 0.30", "emission_share = 0.40"))


def test_not_toml() -> None:
    with pytest.raises(SpecError, match="not valid TOML"):
        parse_spec(b"[[[")


def test_digest_changes_with_any_byte() -> None:
    assert parse_spec(pinned_bytes() + b"\n").digest != pinned().digest
