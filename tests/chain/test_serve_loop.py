"""The serve loop end to end: real rounds in the sandbox, a subnet in a snapshot file.

Three registered miners submit through the drop folder; the chain refuses the first
round's weights twice before taking them; between the rounds one miner is deregistered
and its UID taken by a newcomer; while the second round runs the first round's weights
are pushed again (the chain dropping the first re-push once). Only `Flaky` stands in: a
chain that fails the set calls it is told to, wrapped around the snapshot file chain.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from bittensor_core import Keypair
from prometheus_client import generate_latest

from assay.attest.manifest import pin, write_manifest
from assay.chain.interface import Chain
from assay.chain.snapshot import SnapshotChain, read_snapshot, write_snapshot
from assay.mechanism.spec import Track
from assay.records.chain import ChainError, MetagraphSnapshot, Neuron, UidWeights, WeightReceipt
from assay.store.sqlite import Store
from assay.validator.config import RoundConfig
from assay.validator.serve import Server, read_status
from assay.validator.subnet import Retry

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = Keypair.create_from_uri("//Validator").ss58_address
MINERS = {
    1: ("keyword", Keypair.create_from_uri("//Miner1")),
    2: ("block_all", Keypair.create_from_uri("//Miner2")),
    3: ("coin_flip", Keypair.create_from_uri("//Miner3")),
}
NEWCOMER = Keypair.create_from_uri("//Newcomer").ss58_address


class Flaky(Chain):
    name = "flaky"

    def __init__(self, inner: Chain, failing_calls: set[int]) -> None:
        self.inner = inner
        self.failing_calls = failing_calls
        self.calls = 0

    def snapshot(self) -> MetagraphSnapshot:
        return self.inner.snapshot()

    def set_weights(self, round_id: str, vector: UidWeights) -> WeightReceipt:
        self.calls += 1
        if self.calls in self.failing_calls:
            raise ChainError("the node dropped the connection")
        return self.inner.set_weights(round_id, vector)


def submit(drop: Path, agent: str, miner: Keypair) -> None:
    code = drop / f"{agent}.py"
    shutil.copy(ROOT / "agents" / f"{agent}.py", code)
    path = drop / f"{agent}.manifest.json"
    manifest = pin(
        code,
        track=Track.SKILLS,
        key=miner,
        entrypoint="agent_main",
        sandbox_digest="sha256:test",
        manifest_path=path,
    )
    write_manifest(manifest, path)


@pytest.mark.sandbox
@pytest.mark.slow
def test_three_miners_one_deregistered_a_chain_failing_and_weights_pushed_again(
    tmp_path: Path, skills_pair: Path
) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    for agent, miner in MINERS.values():
        submit(drop, agent, miner)
    subnet = tmp_path / "subnet.json"
    neurons = [Neuron(uid=0, hotkey=VALIDATOR, stake=1000.0, validator_permit=True)]
    neurons += [Neuron(uid=u, hotkey=k.ss58_address, stake=1.0) for u, (_, k) in MINERS.items()]
    write_snapshot(MetagraphSnapshot(netuid=9, block=100, neurons=tuple(neurons)), subnet)

    def deregister_coin_flip(done: int) -> None:
        if done == 1:
            current = read_snapshot(subnet)
            moved = tuple(
                msgspec.structs.replace(n, hotkey=NEWCOMER) if n.uid == 3 else n
                for n in current.neurons
            )
            write_snapshot(msgspec.structs.replace(current, neurons=moved, block=200), subnet)

    db = tmp_path / "rounds.db"
    config = RoundConfig(
        corpus=skills_pair,
        agents=(),
        tracks=(Track.SKILLS,),
        round_seed="5eed",
        db=db,
        secret_file=tmp_path / "validator.secret",
        jobs=2,
    )
    status_path = tmp_path / "status.json"
    server = Server(
        config,
        # Calls 1-2 fail round 1's set, 3 takes it; 4 is the first re-push during round 2.
        Flaky(SnapshotChain(subnet, hotkey=VALIDATOR), failing_calls={1, 2, 4}),
        drop=drop,
        status_path=status_path,
        retry=Retry(attempts=4, backoff_s=0.0, sleep=lambda _: None),
        between_cycles=deregister_coin_flip,
        repush_floor_s=0.0,  # the snapshot has no rate limit: a re-push after every rep
    )
    final = server.serve(cycles=2, pause_s=0.0)

    metrics = generate_latest(server.metrics.registry).decode()
    assert "assay_rounds_completed_total 2.0" in metrics
    assert "assay_chain_retries_total 3.0" in metrics
    status = read_status(status_path)
    assert status == final
    assert (status.phase, status.rounds_completed) == ("stopped", 2)
    assert status.chain_retries == 3
    assert status.last_weights_round == "round-0002" and status.last_weights_block == 200
    with Store(db) as store:
        assert [s.status for s in store.summaries()] == ["completed", "completed"]
        first = store.receipts("round-0001", 9)
        second_reps = len(store.done_reps("round-0002"))
    # Round 1 set at block 100 after its run, then again at block 200 (the subnet as
    # round 2 saw it) after each of round 2's reps, the first re-push retried once.
    assert [(r.success, r.attempts, r.block) for r in first[:3]] == [
        (True, 3, 100),
        (True, 2, 200),
        (True, 1, 200),
    ]
    assert len(first) == 1 + second_reps and all(r.success for r in first)
    assert (
        status.repushes == second_reps and f"assay_weight_repushes_total {second_reps}.0" in metrics
    )
    with Store(db) as store:
        second_plan = store.round("round-0002").plan
    gone = next(h for h, m in second_plan.manifests.items() if m.agent_file == "coin_flip.py")
    assert "is not registered on subnet 9 at block 200" in second_plan.refused[gone]["skills"]
    # The validator's row on the subnet is round 2's vector: the keyword miner keeps its
    # UID's weight; UID 3, now the newcomer's, inherits nothing.
    row = read_snapshot(subnet).neurons[0].weights
    assert row.get(1, 0.0) > 0 and 3 not in row


@pytest.mark.sandbox
@pytest.mark.slow
def test_sigterm_stops_cleanly_and_a_restart_finishes_the_round(
    tmp_path: Path, skills_pair: Path
) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    for agent, miner in MINERS.values():
        submit(drop, agent, miner)
    subnet = tmp_path / "subnet.json"
    neurons = [Neuron(uid=0, hotkey=VALIDATOR, stake=1000.0, validator_permit=True)]
    neurons += [Neuron(uid=u, hotkey=k.ss58_address, stake=1.0) for u, (_, k) in MINERS.items()]
    write_snapshot(MetagraphSnapshot(netuid=9, block=100, neurons=tuple(neurons)), subnet)
    config = tmp_path / "round.toml"
    config.write_text(
        f'[round]\ncorpus = "{skills_pair}"\ntracks = ["skills"]\nseed = "5eed"\n'
        'db = "rounds.db"\nsecret_file = "validator.secret"\njobs = 1\n\n'
        f'[chain]\nsnapshot = "subnet.json"\nhotkey = "{VALIDATOR}"\n'
    )
    status = tmp_path / "status.json"
    command = [
        *(sys.executable, "-m", "assay", "validator", "serve", "--config", str(config)),
        *("--drop", str(drop), "--status", str(status), "--interval", "0", "--cycles", "1"),
    ]
    serving = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and serving.poll() is None:
            if status.exists() and read_status(status).reps_done >= 1:
                break
            time.sleep(0.2)
        assert serving.poll() is None, serving.communicate()
        serving.send_signal(signal.SIGTERM)
        _, err = serving.communicate(timeout=120)
    finally:
        if serving.poll() is None:
            serving.kill()
    assert serving.returncode == 0, err
    stopped = read_status(status)
    assert stopped.phase == "stopped" and stopped.rounds_completed == 0
    with Store(tmp_path / "rounds.db") as store:
        assert store.latest_unfinished() == "round-0001"
        stored_before = len(store.done_reps("round-0001"))
    assert stored_before >= 1

    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    finished = read_status(status)
    assert (finished.round_id, finished.rounds_completed) == ("round-0001", 1)
    assert finished.last_weights_round == "round-0001"
    with Store(tmp_path / "rounds.db") as store:
        assert [s.status for s in store.summaries()] == ["completed"]
