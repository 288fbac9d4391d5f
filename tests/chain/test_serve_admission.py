"""A hostile subnet against a real `validator serve`: admission by first arrival.

One `assay validator serve` process (a snapshot file for a chain, the validator's hotkey
read from its wallet through BT_WALLET_PATH, the miners' HTTP intake on 127.0.0.1) runs
two cycles: the first with an empty drop, the second after every submission below has
arrived (SIGUSR1 ends the hour's pause, or the test times out). One author enters its
agent on two tracks through the intake. Against it, from registered hotkeys that all
sort before the author's: a renamed copy, a padded copy, a packed copy, and a rewrite
whose code escapes containment but whose reports are the same on every task; from a
hotkey the subnet does not register, a renamed copy put in the drop before everything
else; a submission that defeats the screener; a drop file that is not a manifest at all.
The author alone is paid, on both tracks' shares.

A second, cheap test runs the loop with no round: a weight limit the subnet sets and a
drop file whose agent is gone each cost a cycle, never the loop.
"""

from __future__ import annotations

import ast
import base64
import os
import signal
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path

import msgspec
import pytest
from bittensor.wallets import regen_hotkey
from bittensor_core import Keypair
from chain_rounds import completed_round, hotkey

from assay.attest.manifest import pin, write_manifest
from assay.chain.snapshot import SnapshotChain, read_snapshot, write_snapshot
from assay.mechanism.spec import Track
from assay.records.chain import Hyperparameters, MetagraphSnapshot, Neuron
from assay.store.sqlite import Store
from assay.validator.browse import agent_history, round_trends
from assay.validator.config import RoundConfig
from assay.validator.http_intake import submit
from assay.validator.serve import Server, read_status

ROOT = Path(__file__).resolve().parents[2]
KEYWORD = (ROOT / "agents" / "keyword.py").read_text()
SEED = "0x" + "44" * 32
VALIDATOR = Keypair.create_from_seed(bytes([0x44] * 32)).ss58_address
ATTACKERS = ("copier", "padder", "packer", "mimic", "poisoner")


def _keys() -> tuple[Keypair, dict[str, Keypair]]:
    """The author, and one registered attacker per attack, every attacker's address
    sorting before the author's: a validator that orders by name pays them."""
    pool = sorted(
        (Keypair.create_from_uri(f"//Miner{i}") for i in range(40)), key=lambda k: k.ss58_address
    )
    return pool[-1], dict(zip(ATTACKERS, pool, strict=False))


def _renamed(source: str, note: str = "my own scanner") -> str:
    for old, new in [("BEHAVIOUR_RULES", "RULES_A"), ("_scan_behaviour", "look")]:
        source = source.replace(old, new)
    return f"# {note}\n" + source


def _padded(source: str) -> str:
    return source + "".join(f"\ndef pad_{i}(x):\n    return x + {i}\n" for i in range(400))


def _mimic(source: str) -> str:
    """The same behaviour behind dead branches between statements: the code no longer
    contains most of the original's shingles."""

    class Interleave(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            super().generic_visit(node)
            for name in ("body", "orelse", "finalbody"):
                body = getattr(node, name, None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    dead = ast.parse("if False:\n    (0, 0, 0)").body
                    setattr(node, name, [s for stmt in body for s in (stmt, *dead)])
            return node

    return ast.unparse(ast.fix_missing_locations(Interleave().visit(ast.parse(source))))


def _packed(source: str) -> str:
    blob = base64.b64encode(zlib.compress(source.encode())).decode()
    return f"import base64, zlib\nexec(zlib.decompress(base64.b64decode({blob!r})))\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _send(url: str, work: Path, name: str, code: str, key: Keypair, track: Track) -> int:
    agent = work / f"{name}.{track.value}.py"
    agent.write_text(code)
    manifest = pin(agent, track=track, key=key, entrypoint="agent_main",
                   sandbox_digest="sha256:test", manifest_path=work / "m.json")  # fmt: skip
    status, answer = submit(url, code.encode(), manifest, key, validator_hotkey=VALIDATOR)
    assert status == 200, answer
    return status


def _wait(predicate: object, process: subprocess.Popen[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        if callable(predicate) and predicate():
            return
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()
    assert callable(predicate) and predicate(), "timed out"


@pytest.mark.sandbox
@pytest.mark.slow
def test_the_author_is_paid_on_both_tracks_and_every_copy_gets_nothing(
    tmp_path: Path, skills_packages_pair: Path
) -> None:
    author, attackers = _keys()
    outsider = Keypair.create_from_uri("//Unregistered")
    wallets = tmp_path / "wallets"
    regen_hotkey(name="validator", hotkey="default", path=str(wallets), seed=SEED)
    corpus = skills_packages_pair
    registered = [author, *attackers.values()]
    neurons = [Neuron(uid=0, hotkey=VALIDATOR, stake=1000.0, validator_permit=True)]
    neurons += [
        Neuron(uid=u, hotkey=k.ss58_address, stake=1.0) for u, k in enumerate(registered, 1)
    ]
    subnet = MetagraphSnapshot(netuid=7, block=50, neurons=tuple(neurons))
    write_snapshot(subnet, tmp_path / "subnet.json")
    config = tmp_path / "round.toml"
    config.write_text(
        f'[round]\ncorpus = "{corpus}"\ntracks = ["skills", "packages"]\nseed = "5eed"\n'
        'db = "rounds.db"\nsecret_file = "validator.secret"\njobs = 2\n\n'
        '[chain]\nsnapshot = "subnet.json"\nwallet = "validator"\nhotkey = "default"\n'
    )  # fmt: skip
    drop, status, work = tmp_path / "drop", tmp_path / "status.json", tmp_path / "work"
    drop.mkdir()
    work.mkdir()
    port = _free_port()
    serving = subprocess.Popen(
        [
            *(sys.executable, "-m", "assay", "validator", "serve", "--config", str(config)),
            *("--drop", str(drop), "--status", str(status), "--intake-port", str(port)),
            *("--interval", "3600", "--cycles", "2"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"BT_WALLET_PATH": str(wallets)},
    )
    try:
        _wait(lambda: status.exists() and read_status(status).phase == "idle", serving, 120)
        # First, straight into the drop: a hotkey the subnet does not register, and junk.
        unregistered = drop / "outsider.py"
        unregistered.write_text(_renamed(KEYWORD, "an outsider's scanner"))
        write_manifest(
            pin(unregistered, track=Track.SKILLS, key=outsider, entrypoint="agent_main",
                sandbox_digest="sha256:test", manifest_path=drop / "outsider.manifest.json"),
            drop / "outsider.manifest.json",
        )  # fmt: skip
        (drop / "junk.manifest.json").write_text("{not json")
        url = f"http://127.0.0.1:{port}"
        for track in (Track.SKILLS, Track.PACKAGES):
            _send(url, work, "author", KEYWORD, author, track)
        poison = "X = " + " + ".join('"a"' for _ in range(20_000)) + "\n"
        for name, code in [
            ("copier", _renamed(KEYWORD)),
            ("padder", _padded(_renamed(KEYWORD))),
            ("packer", _packed(KEYWORD)),
            ("mimic", _mimic(KEYWORD)),
            ("poisoner", poison),
        ]:  # fmt: skip
            _send(url, work, name, code, attackers[name], Track.SKILLS)
        serving.send_signal(signal.SIGUSR1)  # everything has arrived: the next cycle, now
        out, err = serving.communicate(timeout=900)
    finally:
        if serving.poll() is None:
            serving.kill()
    assert serving.returncode == 0, err
    assert f"intake on http://127.0.0.1:{port}/submit for {VALIDATOR}" in out
    assert f"serving as {VALIDATOR} (UID 0)" in out and "round-0001 set at block 50" in out

    final = read_status(status)
    assert (final.rounds_completed, final.last_weights_round) == (1, "round-0001")
    assert any("junk.manifest.json" in q for q in final.quarantined)
    assert (drop / "quarantine" / "junk.manifest.json.reason.txt").is_file()

    with Store(tmp_path / "rounds.db") as store:
        plan = store.round("round-0001").plan
        card = store.scorecard("round-0001")
        paid = store.previous_hotkey_weights(7, store.round("round-0001").seq + 1)
    owner = {m.author_key: h for h, m in plan.manifests.items()}
    keyword = owner[author.ss58_address]
    assert keyword not in plan.refused and set(plan.entries[keyword]) == {"skills", "packages"}
    refused = {name: plan.refused[owner[k.ss58_address]]["skills"] for name, k in attackers.items()
               if name != "mimic"}  # fmt: skip
    assert refused["copier"].startswith("copy screening: the same code, once normalised")
    assert refused["padder"].startswith("copy screening: contains 1.000 of")
    assert "builds code from data at import time" in refused["packer"]
    assert "could not read it (RecursionError)" in refused["poisoner"]
    assert "is not registered on subnet 7" in plan.refused[owner[outsider.ss58_address]]["skills"]
    mimic = owner[attackers["mimic"].ss58_address]
    assert "skills" not in plan.refused[mimic]  # its code passed; its reports gave it away
    assert card is not None and mimic in card.copies["skills"]
    assert card.scores["skills"][mimic].score == 0.0
    # Every view that lists rounds or an agent's history shows the copy as refused.
    (history,) = agent_history(mimic, tmp_path / "rounds.db")
    assert history.refused["skills"] == card.copies["skills"][mimic] and not history.scores
    (trend,) = round_trends(tmp_path / "rounds.db")
    assert mimic not in trend.ranked("skills") and keyword in trend.ranked("skills")

    assert {(w.hotkey, w.track) for w in paid if w.weight > 0} == {
        (author.ss58_address, "skills"),
        (author.ss58_address, "packages"),
    }
    row = read_snapshot(tmp_path / "subnet.json").neurons[0].weights
    assert set(row) == {registered.index(author) + 1}
    assert final.errors and all(e.startswith("quarantined junk") for e in final.errors)


def test_a_weight_limit_and_a_broken_drop_file_cost_a_cycle_not_the_loop(tmp_path: Path) -> None:
    """No round runs here: a completed round waits in the store for weights the subnet's
    min_allowed_weights refuses, and the drop holds a manifest whose agent is gone."""
    db = tmp_path / "rounds.db"
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    neurons = (
        Neuron(uid=0, hotkey=VALIDATOR, stake=1000.0, validator_permit=True),
        Neuron(uid=1, hotkey=hotkey("ana"), stake=1.0),
    )
    strict = MetagraphSnapshot(
        netuid=7, block=60, neurons=neurons, hyperparameters=Hyperparameters(min_allowed_weights=4)
    )
    subnet = tmp_path / "subnet.json"
    write_snapshot(strict, subnet)
    drop = tmp_path / "drop"
    drop.mkdir()
    orphan = drop / "orphan.py"
    orphan.write_text("def agent_main(context):\n    return {}\n")
    pinned = pin(orphan, track=Track.SKILLS, key=Keypair.create_from_uri("//Orphan"),
                 entrypoint="agent_main", sandbox_digest="sha256:test",
                 manifest_path=drop / "orphan.manifest.json")  # fmt: skip
    write_manifest(pinned, drop / "orphan.manifest.json")
    orphan.unlink()

    def relax(done: int) -> None:  # the subnet lowers its limit after the first cycle
        if done == 1:
            write_snapshot(
                msgspec.structs.replace(strict, hyperparameters=Hyperparameters()), subnet
            )

    config = RoundConfig(corpus=tmp_path, agents=(), tracks=(Track.SKILLS,), db=db,
                         secret_file=tmp_path / "secret")  # fmt: skip
    server = Server(config, SnapshotChain(subnet, VALIDATOR), drop=drop,
                    status_path=tmp_path / "status.json", between_cycles=relax)  # fmt: skip
    final = server.serve(cycles=2, pause_s=0.0)
    assert final.phase == "stopped" and final.last_weights_round == "round-0001"
    assert any(e.startswith("setting round-0001's weights: subnet 7") for e in final.errors)
    assert [q.split(":")[0] for q in final.quarantined] == ["orphan.manifest.json"]
    assert (drop / "quarantine" / "orphan.manifest.json.reason.txt").is_file()
    assert read_snapshot(subnet).neurons[0].weights == {1: 1.0}
