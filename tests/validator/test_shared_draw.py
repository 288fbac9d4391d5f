"""A chain-mode round's shared draw: the seed is the subnet's anchor block hash with the
corpus digest, the draw uses no validator id, and the plan records what it came from so
anyone can recompute it (`mechanism/draw.py`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest

from assay.chain.snapshot import read_snapshot, synthetic_snapshot, write_snapshot
from assay.corpus.interface import corpus_digest
from assay.corpus.native import NativeCorpus
from assay.mechanism.draw import draw_tasks
from assay.mechanism.spec import Track
from assay.records.plan import RoundPlan
from assay.store.sqlite import Store
from assay.validator.config import ConfigError, RoundOverrides, round_config
from assay.validator.rounds import Round

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "agents" / "keyword.py"


def _subnet(tmp: Path, block_hash: str | None = "0x" + "ab" * 32) -> Path:
    snapshot = synthetic_snapshot(netuid=4, uids=8, validators=2)
    anchor = snapshot.anchor_block if block_hash else None
    snapshot = msgspec.structs.replace(snapshot, anchor_block=anchor, block_hash=block_hash)
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "subnet.json"
    write_snapshot(snapshot, path)
    return path


def _planned(tmp: Path, name: str, subnet: Path | None, seed: str | None = None) -> RoundPlan:
    overrides = RoundOverrides(
        corpus=ROOT / "corpus",
        agents=(AGENT,),
        tracks=(Track.SKILLS, Track.PACKAGES),
        validator_id=name,
        secret_file=tmp / name / "secret",
        db=tmp / name / "rounds.db",
        round_seed=seed,
    )
    started = Round.start(round_config(None, overrides), subnet=subnet)
    with Store(started.store_path) as store:
        return store.round(started.round_id).plan


def test_validators_with_one_anchor_and_corpus_draw_the_same_tasks(tmp_path: Path) -> None:
    subnet = _subnet(tmp_path)
    plans = [_planned(tmp_path, name, subnet) for name in ("v-a", "v-b", "v-c")]
    assert plans[0].draw() == plans[1].draw() == plans[2].draw()
    assert len({p.validator_id for p in plans}) == 3

    # Recomputed by hand from what the plan records: seed, then the keys without an id.
    shared = plans[0].shared
    assert shared is not None and shared.block_hash == "0x" + "ab" * 32
    assert shared.anchor_block == read_snapshot(subnet).anchor_block
    corpus = NativeCorpus(ROOT / "corpus")
    tasks = [t for track in (Track.SKILLS, Track.PACKAGES) for t in corpus.tasks(track)]
    assert shared.corpus_digest == corpus_digest(tasks)
    text = f"assay/round-seed/v1:{shared.block_hash}:{shared.corpus_digest}"
    seed = hashlib.sha256(text.encode()).hexdigest()
    assert plans[0].round_seed == seed
    expected = draw_tasks(
        corpus.tasks(Track.SKILLS), track=Track.SKILLS, round_seed=seed, validator_id=None, count=9
    )
    assert plans[0].draw()["skills"][:9] == [t.task_id for t in expected]
    assert plans[0].to_json()["draw_seed"] == seed


def test_another_anchor_block_draws_other_tasks(tmp_path: Path) -> None:
    one = _planned(tmp_path / "one", "v", _subnet(tmp_path / "one"))
    other = _planned(tmp_path / "two", "v", _subnet(tmp_path / "two", "0x" + "cd" * 32))
    assert one.round_seed != other.round_seed and one.draw() != other.draw()


def test_local_rounds_keep_their_own_draw_and_seed(tmp_path: Path) -> None:
    a = _planned(tmp_path, "v-a", None, "5eed")
    b = _planned(tmp_path, "v-b", None, "5eed")
    assert a.shared is None and a.round_seed == "5eed"
    assert a.draw() != b.draw()
    # A snapshot without an anchor (a version 1 file) leaves the draw the validator's own.
    unanchored = _planned(tmp_path, "v-c", _subnet(tmp_path, None), "5eed")
    assert unanchored.shared is None


def test_a_seed_given_in_chain_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="chain mode"):
        _planned(tmp_path, "v", _subnet(tmp_path), "5eed")
