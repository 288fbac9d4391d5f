"""The metagraph snapshot file: its format, its checks, and the snapshot as a local chain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.chain.snapshot import SnapshotChain, read_snapshot, synthetic_snapshot, write_snapshot
from assay.records.chain import (
    ChainError,
    MetagraphSnapshot,
    Neuron,
    SnapshotError,
    UidWeights,
)

MINER = "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty"
VALIDATOR = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"


def small() -> MetagraphSnapshot:
    return MetagraphSnapshot(
        netuid=7,
        block=100,
        neurons=(
            Neuron(uid=0, hotkey=VALIDATOR, stake=50.0, validator_permit=True, weights={1: 1.0}),
            Neuron(uid=1, hotkey=MINER, stake=1.0),
        ),
    )


def test_the_file_is_the_documented_json(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    write_snapshot(small(), path)
    data = json.loads(path.read_text())
    assert data["version"] == 2
    assert (data["netuid"], data["block"]) == (7, 100)
    assert data["neurons"][0] == {
        "uid": 0,
        "hotkey": VALIDATOR,
        "stake": 50.0,
        "validator_permit": True,
        "last_update": 0,
        "weights": {"1": 1.0},
        "registered_at": 0,
    }
    assert read_snapshot(path) == small()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(version=3), "snapshot version 3"),
        (lambda d: d["neurons"][0].update(stake=1.7e308), "UID 0: stake 1.7e\\+308 is above"),
        (lambda d: d["neurons"][0]["weights"].update({"1": 1e300}), "weight 1e\\+300 on UID 1"),
        (lambda d: d.update(anchor_block=5), "anchor_block and block_hash"),
        (lambda d: d.update(anchor_block=500, block_hash="0x" + "ab" * 32), "after the snapshot"),
        (lambda d: d.update(anchor_block=5, block_hash="0xnothex"), "block_hash"),
        (lambda d: d["neurons"][1].update(uid=0), "a UID appears twice"),
        (lambda d: d["neurons"][1].update(hotkey=VALIDATOR), "a hotkey holds two UIDs"),
        (lambda d: d["neurons"][0]["weights"].update({"9": 0.5}), "not in the snapshot"),
        (lambda d: d["neurons"][1].update(stake=-1), "negative stake"),
        (lambda d: d.pop("block"), "block"),
        (lambda d: d["neurons"][0].update(weights={"x": 1}), "weights"),
        (lambda d: d["neurons"][1].update(uid=-1), "uid"),
        (lambda d: d["neurons"][1].update(uid=70000), "uid"),
        (lambda d: d["neurons"][1].update(hotkey=""), "hotkey"),
        (lambda d: d["neurons"][1].update(stake=float("inf")), "malformed"),  # Infinity
        (lambda d: d.update(hyperparameters={"max_weight_limit": 65536}), "max_weight_limit"),
        (lambda d: d.update(netuid="one"), "netuid"),
    ],
)
def test_a_wrong_file_is_refused_naming_the_problem(
    tmp_path: Path, edit: object, message: str
) -> None:
    data = json.loads(small().to_json())
    edit(data)  # type: ignore[operator]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SnapshotError, match=message):
        read_snapshot(path)


def test_a_version_1_file_is_read_and_written_back_as_version_2(tmp_path: Path) -> None:
    data = json.loads(small().to_json())
    data["version"] = 1
    for neuron in data["neurons"]:
        del neuron["registered_at"]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    snapshot = read_snapshot(path)
    assert snapshot.neurons[1].registered_at == 0
    assert snapshot.hyperparameters.kappa == 32767
    write_snapshot(snapshot, path)
    assert json.loads(path.read_text())["version"] == 2


def test_a_missing_file_is_a_snapshot_error(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="No such file"):
        read_snapshot(tmp_path / "absent.json")


def test_setting_weights_writes_the_validators_row(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    write_snapshot(small(), path)
    chain = SnapshotChain(path, hotkey=VALIDATOR)
    receipt = chain.set_weights("r1", UidWeights(uids=(0, 1), weights=(65535, 21845)))
    assert receipt.success and receipt.block == 100 and receipt.uids == (0, 1)
    row = chain.snapshot().neuron(0)
    assert row is not None and row.last_update == 100
    assert row.weights == pytest.approx({0: 0.75, 1: 0.25}, abs=1e-5)


def test_an_unregistered_hotkey_cannot_set(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    write_snapshot(small(), path)
    with pytest.raises(ChainError, match="not registered"):
        SnapshotChain(path, hotkey="5Unknown").set_weights(
            "r1", UidWeights(uids=(1,), weights=(1,))
        )


def test_the_synthetic_subnet_is_fixed_by_its_arguments() -> None:
    one = synthetic_snapshot(netuid=3, uids=32, validators=4, register=(MINER,))
    assert one == synthetic_snapshot(netuid=3, uids=32, validators=4, register=(MINER,))
    assert one.problem() is None
    assert [n.uid for n in one.neurons if n.validator_permit] == [0, 1, 2, 3]
    assert one.uid_of(MINER) == 4
    for validator in one.neurons[:4]:
        assert sum(validator.weights.values()) == pytest.approx(1.0)
    assert one != synthetic_snapshot(netuid=3, uids=32, validators=4, seed="other")
