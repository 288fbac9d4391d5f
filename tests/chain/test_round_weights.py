"""A completed round's weights on a subnet: hotkeys, drops, EMA per hotkey, receipts, retries.

Everything runs for real against a snapshot file (the chain part's air-gapped chain)
and a real round store; only `Flaky` stands in for a chain that fails, to count retries.
"""

from __future__ import annotations

import json
from pathlib import Path

import chain_rounds
import msgspec
import pytest
from chain_rounds import agent_hash, completed_round, hotkey

from assay.chain.conform import WeightLimitError
from assay.chain.interface import Chain
from assay.chain.snapshot import SnapshotChain, read_snapshot, write_snapshot
from assay.mechanism.spec import Track
from assay.records.chain import (
    ChainError,
    MetagraphSnapshot,
    Neuron,
    UidWeights,
    WeightReceipt,
)
from assay.records.plan import RoundPlan
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store
from assay.validator.config import ConfigError
from assay.validator.subnet import (
    AlreadySet,
    Retry,
    by_hotkey,
    preview_file,
    read_weights_file,
    set_round_weights,
)

VALIDATOR = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"
NO_WAIT = Retry(sleep=lambda _: None)


def subnet(path: Path, owners: dict[int, str], registered: dict[int, int] | None = None) -> Path:
    """UID 0 is the validator; `owners` registers the other UIDs (at the block
    `registered` gives, else an unknown one)."""
    at = registered or {}
    neurons = [Neuron(uid=0, hotkey=VALIDATOR, stake=100.0, validator_permit=True)]
    neurons += [
        Neuron(uid=u, hotkey=h, stake=1.0, registered_at=at.get(u, 0))
        for u, h in sorted(owners.items())
    ]
    write_snapshot(MetagraphSnapshot(netuid=3, block=900, neurons=tuple(neurons)), path)
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "rounds.db"


def test_a_dry_run_maps_agents_to_uids_and_names_every_drop(tmp_path: Path, db: Path) -> None:
    completed_round(
        db,
        "round-0001",
        {("ana", 1): 0.5, ("bo", 1): 0.3, ("cy", 1): 0.1},
        unsigned={agent_hash("plain"): 0.1},
    )
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana"), 7: hotkey("bo")})
    result = set_round_weights("round-0001", SnapshotChain(snap), db=db, dry_run=True)
    assert result.vector.uids == (4, 7)
    assert result.vector.weights == (65535, 39321)  # 0.3 / 0.5 of the largest
    assert [(d.hotkey, d.agents, d.reason) for d in result.vector.dropped] == [
        (None, (agent_hash("plain"),), "unsigned"),
        (hotkey("cy"), (agent_hash("cy"),), "unregistered"),
    ]
    assert result.receipt is None
    out = result.to_json()
    assert {"uids", "weights", "dropped", "receipt"} <= set(out)
    with Store(db) as store:
        assert store.receipts("round-0001", 3) == []


def test_weights_are_set_once_recorded_and_set_again_only_when_forced(
    tmp_path: Path, db: Path
) -> None:
    completed_round(db, "round-0001", {("ana", 1): 0.6, ("bo", 1): 0.4})
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana"), 7: hotkey("bo")})
    chain = SnapshotChain(snap, hotkey=VALIDATOR)
    result = set_round_weights("round-0001", chain, db=db, retry=NO_WAIT)
    assert result.receipt is not None and result.receipt.success
    assert read_snapshot(snap).neurons[0].weights == pytest.approx({4: 0.6, 7: 0.4}, abs=1e-4)
    with pytest.raises(AlreadySet, match="--force"):
        set_round_weights("round-0001", chain, db=db, retry=NO_WAIT)
    again = set_round_weights("round-0001", chain, db=db, force=True, retry=NO_WAIT)
    assert again.vector == result.vector
    with Store(db) as store:
        assert [r.success for r in store.receipts("round-0001", 3)] == [True, True]


class Flaky(Chain):
    """A chain that refuses the first `failures` sets, then passes them on."""

    name = "flaky"

    def __init__(self, inner: Chain, failures: int) -> None:
        self.inner = inner
        self.failures = failures

    def snapshot(self) -> MetagraphSnapshot:
        return self.inner.snapshot()

    def set_weights(self, round_id: str, vector: UidWeights) -> WeightReceipt:
        if self.failures:
            self.failures -= 1
            raise ChainError("connection reset by the node")
        return self.inner.set_weights(round_id, vector)


def test_a_failing_chain_is_retried_with_a_doubling_pause(tmp_path: Path, db: Path) -> None:
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana")})
    pauses: list[float] = []
    retry = Retry(attempts=4, backoff_s=2.0, sleep=pauses.append)
    chain = Flaky(SnapshotChain(snap, hotkey=VALIDATOR), failures=2)
    receipt = set_round_weights("round-0001", chain, db=db, retry=retry).receipt
    assert receipt is not None and receipt.success and receipt.attempts == 3
    assert pauses == [2.0, 4.0]


def test_a_chain_that_never_takes_them_leaves_a_failed_receipt_and_the_round_settable(
    tmp_path: Path, db: Path
) -> None:
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana")})
    chain = Flaky(SnapshotChain(snap, hotkey=VALIDATOR), failures=9)
    receipt = set_round_weights("round-0001", chain, db=db, retry=NO_WAIT).receipt
    assert receipt is not None and not receipt.success and receipt.attempts == 4
    assert "connection reset" in receipt.message
    chain.failures = 0
    later = set_round_weights("round-0001", chain, db=db, retry=NO_WAIT).receipt
    assert later is not None and later.success


def test_the_ema_follows_the_hotkey_across_agent_versions(tmp_path: Path, db: Path) -> None:
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana"), 7: hotkey("bo")})
    chain = SnapshotChain(snap, hotkey=VALIDATOR)
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    set_round_weights("round-0001", chain, db=db, retry=NO_WAIT)
    # Ana submits a new version that earns nothing this round; Bo wins it.
    completed_round(db, "round-0002", {("ana", 2): 0.0, ("bo", 1): 1.0})
    result = set_round_weights("round-0002", chain, db=db, retry=NO_WAIT)
    # α = 0.3: Ana keeps 0.7 of her standing, Bo gets 0.3.
    assert result.vector.hotkeys == pytest.approx({hotkey("ana"): 0.7, hotkey("bo"): 0.3})
    assert [(e.hotkey, e.uid) for e in result.ema] == sorted(
        [(hotkey("ana"), 4), (hotkey("bo"), 7)]
    )


def test_a_uid_that_changes_owner_starts_afresh_and_a_gone_hotkey_is_deregistered(
    tmp_path: Path, db: Path
) -> None:
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana"), 7: hotkey("bo")})
    chain = SnapshotChain(snap, hotkey=VALIDATOR)
    completed_round(db, "round-0001", {("ana", 1): 0.5, ("bo", 1): 0.5})
    set_round_weights("round-0001", chain, db=db, retry=NO_WAIT)
    # Bo is deregistered; Cy takes UID 7; Ana moves to UID 9 (deregistered, registered again).
    subnet(snap, {9: hotkey("ana"), 7: hotkey("cy")})
    completed_round(db, "round-0002", {("ana", 1): 0.5, ("cy", 1): 0.5})
    result = set_round_weights("round-0002", chain, db=db, retry=NO_WAIT)
    # Nothing carried: Bo's standing does not pass to UID 7's new owner, nor Ana's old
    # UID's to her new one.
    assert result.vector.hotkeys == pytest.approx({hotkey("ana"): 0.5, hotkey("cy"): 0.5})
    assert result.vector.uids == (7, 9)
    assert [d.reason for d in result.vector.dropped] == []
    # Bo still earns something in round 3 only through history he no longer has.
    completed_round(db, "round-0003", {("bo", 1): 1.0, ("ana", 1): 0.5, ("cy", 1): 0.5})
    third = set_round_weights("round-0003", chain, db=db, dry_run=True)
    assert [(d.hotkey, d.reason) for d in third.vector.dropped] == [(hotkey("bo"), "unregistered")]


def test_a_hotkey_registered_again_at_its_uid_starts_afresh(tmp_path: Path, db: Path) -> None:
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana"), 7: hotkey("bo")}, {4: 100, 7: 100})
    chain = SnapshotChain(snap, hotkey=VALIDATOR)
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    set_round_weights("round-0001", chain, db=db, retry=NO_WAIT)
    # Ana was deregistered and took UID 4 again at block 800: same hotkey, same UID.
    subnet(snap, {4: hotkey("ana"), 7: hotkey("bo")}, {4: 800, 7: 100})
    completed_round(db, "round-0002", {("ana", 1): 0.0, ("bo", 1): 1.0})
    result = set_round_weights("round-0002", chain, db=db, retry=NO_WAIT)
    assert result.vector.hotkeys == pytest.approx({hotkey("bo"): 1.0})
    assert [(e.hotkey, e.registered_at) for e in result.ema] == [(hotkey("bo"), 100)]


def test_a_round_that_is_not_completed_is_refused(tmp_path: Path, db: Path) -> None:
    from assay.store.sqlite import StoreError

    completed_round(db, "round-0001", {("ana", 1): 1.0})
    with Store(db) as store:
        store.reopen("round-0001")
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana")})
    # No process runs it: the store reads it as interrupted.
    with pytest.raises(StoreError, match="interrupted"):
        set_round_weights("round-0001", SnapshotChain(snap), db=db, dry_run=True)


def test_the_preview_replaces_the_validators_row_with_the_rounds_weights(
    tmp_path: Path, db: Path
) -> None:
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    snap = tmp_path / "s.json"
    neurons = (
        Neuron(uid=0, hotkey=VALIDATOR, stake=60.0, validator_permit=True, weights={5: 1.0}),
        Neuron(uid=1, hotkey="v1", stake=40.0, validator_permit=True, weights={4: 0.5, 5: 0.5}),
        Neuron(uid=4, hotkey=hotkey("ana"), stake=1.0),
        Neuron(uid=5, hotkey="other", stake=1.0),
    )
    write_snapshot(MetagraphSnapshot(netuid=3, block=900, neurons=neurons), snap)
    result = preview_file(snap, 0, round_id="round-0001", db=db).to_json()
    # UID 0 (60% of the stake) now puts everything on UID 4: alone it is the κ-majority,
    # so the consensus is its row and UID 1's half on UID 5 is clipped away.
    assert result["row"] == {4: 1.0}
    assert result["consensus"] == pytest.approx({4: 1.0, 5: 0.0})
    assert result["vtrust"] == pytest.approx({0: 1.0, 1: 0.5})
    assert result["incentive"] == pytest.approx({4: 1.0, 5: 0.0})
    assert [d["miner"] for d in result["disagreements"]] == []
    as_stands = preview_file(snap, 0, db=db).to_json()
    assert as_stands["row"] == {5: 1.0}
    assert as_stands["vtrust"] == pytest.approx({0: 1.0, 1: 0.5})
    assert as_stands["incentive"] == pytest.approx({4: 0.0, 5: 1.0})
    json.dumps(result)  # printable as it is


def test_a_weights_file_is_uid_to_weight(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text('{"4": 2, "5": 1.5}')
    assert read_weights_file(path) == {4: 2.0, 5: 1.5}
    for bad in ('["4"]', '{"x": 1}', '{"4": -1}', '{"4": true}', "nope"):
        path.write_text(bad)
        with pytest.raises(ConfigError, match="weights file"):
            read_weights_file(path)


def test_one_agent_on_two_tracks_weighs_its_hotkey_on_both() -> None:
    both = {
        "skills": chain_rounds.manifest("alice"),
        "packages": chain_rounds.manifest("alice", track=Track.PACKAGES),
    }
    agent = chain_rounds.agent_hash("alice")
    spec = pinned()
    plan = RoundPlan(
        round_seed="5eed", validator_id="local", mechanism_version=spec.version,
        mechanism_digest=spec.digest, corpus="c", reps={Track.SKILLS: 1, Track.PACKAGES: 1},
        tasks=(), agents=(agent,), manifests={agent: both["skills"]}, entries={agent: both},
    )  # fmt: skip
    slots, agents, unsigned = by_hotkey(
        plan, {agent: 1.0}, {"skills": {agent: 0.75}, "packages": {agent: 0.25}}
    )
    hotkey = chain_rounds.hotkey("alice")
    assert slots == {(hotkey, "skills"): 0.75, (hotkey, "packages"): 0.25}
    assert agents == {hotkey: [agent]} and unsigned == []


def test_a_version_key_below_the_subnets_is_refused_before_anything_is_sent(
    tmp_path: Path, db: Path
) -> None:
    snap = subnet(tmp_path / "s.json", {4: hotkey("ana")})
    data = read_snapshot(snap)
    hyper = msgspec.structs.replace(data.hyperparameters, version_key=7)
    write_snapshot(msgspec.structs.replace(data, hyperparameters=hyper), snap)
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    with pytest.raises(WeightLimitError, match="IncorrectWeightVersionKey"):
        set_round_weights("round-0001", SnapshotChain(snap, VALIDATOR), db=db, retry=NO_WAIT)
    assert read_snapshot(snap).neuron(0).weights == {}  # type: ignore[union-attr]
    taken = set_round_weights("round-0001", SnapshotChain(snap, VALIDATOR, 7), db=db, retry=NO_WAIT)
    assert taken.receipt is not None and taken.receipt.success
