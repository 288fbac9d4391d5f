"""`assay chain` as a user runs it: a synthetic subnet, a dry run, a set, the preview."""

from __future__ import annotations

import json
from pathlib import Path

from bittensor.wallets import regen_hotkey
from bittensor_core import Keypair
from chain_rounds import author, completed_round, hotkey

from assay.chain.snapshot import read_snapshot, write_snapshot
from assay.records.chain import MetagraphSnapshot, Neuron
from assay.store.sqlite import Store
from inprocess_cli import run_cli


def test_snapshot_dry_run_set_and_preview(tmp_path: Path) -> None:
    db = tmp_path / "rounds.db"
    completed_round(db, "round-0001", {("ana", 1): 0.7, ("bo", 1): 0.3})
    snap = tmp_path / "subnet.json"
    made = run_cli(
        [
            *("chain", "snapshot", "--synthetic", "32", "--validators", "4", "--netuid", "2"),
            *("--register", author("ana"), "--out", str(snap)),
        ]
    )
    assert made.returncode == 0, made.stderr
    assert "32 UIDs, 4 validators" in made.stdout

    dry = run_cli(
        [
            *("chain", "weights", "round-0001", "--snapshot", str(snap), "--db", str(db)),
            *("--dry-run", "--json"),
        ]
    )
    assert dry.returncode == 0, dry.stderr
    out = json.loads(dry.stdout)
    assert (out["uids"], out["weights"], out["receipt"]) == ([4], [65535], None)
    assert [d["reason"] for d in out["dropped"]] == ["unregistered"]

    validator = read_snapshot(snap).neurons[0].hotkey
    # The store is the config's [round] db; a hotkey the snapshot does not register is a
    # configuration error, refused before anything is sent (nothing retried, no receipt).
    config = tmp_path / "round.toml"
    config.write_text(
        f'[round]\ndb = "{db.name}"\n\n[chain]\nsnapshot = "{snap.name}"\n'
        f'hotkey = "{hotkey("bo")}"\n'
    )
    stranger = run_cli(["chain", "weights", "round-0001", "--config", str(config)])
    assert stranger.returncode == 2 and "is not registered on subnet 2" in stranger.stderr
    with Store(db) as store:
        assert store.receipts("round-0001", 2) == []
    base = ["chain", "weights", "round-0001", "--snapshot", str(snap), "--db", str(db)]
    setting = run_cli([*base, "--hotkey", validator, "--json"])
    assert setting.returncode == 0, setting.stderr
    assert json.loads(setting.stdout)["receipt"]["success"] is True
    again = run_cli([*base, "--hotkey", validator])
    assert again.returncode == 2 and "--force" in again.stderr

    shown = run_cli(
        [
            *("chain", "preview", "--snapshot", str(snap), "--as", "0"),
            *("--weights", "round-0001", "--db", str(db), "--json"),
        ]
    )
    assert shown.returncode == 0, shown.stderr
    preview = json.loads(shown.stdout)
    assert set(preview["vtrust"]) == {"0", "1", "2", "3"}
    assert abs(sum(preview["incentive"].values()) - 1.0) < 1e-9
    table = run_cli(["chain", "preview", "--snapshot", str(snap), "--as", "0"])
    assert table.returncode == 0 and "vtrust of UID 0" in table.stdout


def test_mistakes_are_usage_errors(tmp_path: Path) -> None:
    missing = run_cli(["chain", "preview", "--snapshot", str(tmp_path / "no.json"), "--as", "0"])
    assert missing.returncode == 2 and "No such file" in missing.stderr
    db = tmp_path / "rounds.db"
    completed_round(db, "round-0001", {("ana", 1): 1.0})
    nowhere = run_cli(["chain", "weights", "round-0001", "--db", str(db), "--dry-run"])
    assert nowhere.returncode == 2 and "--netuid" in nowhere.stderr


def test_a_snapshot_with_an_enormous_stake_is_refused_naming_the_field(tmp_path: Path) -> None:
    snap = tmp_path / "subnet.json"
    made = run_cli(
        ["chain", "snapshot", "--synthetic", "8", "--validators", "2", "--out", str(snap)]
    )
    assert made.returncode == 0, made.stderr
    data = json.loads(snap.read_text())
    data["neurons"][1]["stake"] = 1.7e308
    snap.write_text(json.dumps(data))
    shown = run_cli(["chain", "preview", "--snapshot", str(snap), "--as", "0"])
    assert shown.returncode == 2, shown.stderr
    assert "UID 1: stake 1.7e+308 is above the maximum" in shown.stderr


def test_serve_with_nothing_submitted_and_its_status(tmp_path: Path) -> None:
    wallets = tmp_path / "wallets"
    regen_hotkey(name="validator", hotkey="default", path=str(wallets), seed="0x" + "22" * 32)
    me = Keypair.create_from_seed(bytes([0x22] * 32)).ss58_address
    snap = tmp_path / "subnet.json"
    made = run_cli(["chain", "snapshot", "--synthetic", "8", "--register", me, "--out", str(snap)])
    assert made.returncode == 0, made.stderr
    drop = tmp_path / "drop"
    drop.mkdir()
    status = tmp_path / "status.json"
    config = tmp_path / "round.toml"
    config.write_text(
        f'[round]\ndb = "rounds.db"\n\n[chain]\nsnapshot = "{snap.name}"\n'
        'wallet = "validator"\nhotkey = "default"\n'
    )
    serve = [
        *("validator", "serve", "--config", str(config), "--drop", str(drop)),
        *("--status", str(status), "--cycles", "1", "--interval", "0"),
    ]
    # The wallet's hotkey cannot be read (BT_WALLET_PATH names no wallets): refused at start.
    elsewhere = run_cli(serve, env={"BT_WALLET_PATH": str(tmp_path / "none")})
    assert elsewhere.returncode == 2 and "cannot read hotkey 'default'" in elsewhere.stderr
    served = run_cli(serve, env={"BT_WALLET_PATH": str(wallets)})
    assert served.returncode == 0, served.stderr
    assert f"serving as {me} (UID" in served.stdout
    assert (
        "cycle: starting -> snapshot" in served.stdout and "no completed round yet" in served.stdout
    )
    assert "stopped: round -" in served.stdout and "0 re-pushes" in served.stdout
    # Another hotkey of the wallet, not registered on the subnet: refused at start, exit 2.
    regen_hotkey(name="validator", hotkey="other", path=str(wallets), seed="0x" + "33" * 32)
    config.write_text(config.read_text().replace('hotkey = "default"', 'hotkey = "other"'))
    stranger = run_cli(serve, env={"BT_WALLET_PATH": str(wallets)})
    assert stranger.returncode == 2 and "is not registered on subnet" in stranger.stderr
    # An operator's seed would replace the subnet's shared draw every cycle: refused at start.
    config.write_text(
        config.read_text().replace('hotkey = "other"', 'hotkey = "default"')
        .replace("[round]\n", '[round]\nseed = "5eed"\n')
    )  # fmt: skip
    seeded = run_cli(serve, env={"BT_WALLET_PATH": str(wallets)})
    assert seeded.returncode == 2 and "a round seed is for local rounds" in seeded.stderr
    shown = run_cli(["validator", "status", "--status", str(status), "--json"])
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["phase"] == "stopped"
    missing = run_cli(["validator", "status", "--status", str(tmp_path / "none.json")])
    assert missing.returncode == 2 and "is it serving" in missing.stderr


def test_the_html_report_previews_consensus_only_with_a_snapshot(tmp_path: Path) -> None:
    db = tmp_path / "rounds.db"
    completed_round(db, "round-0001", {("ana", 1): 0.75, ("bo", 1): 0.25})
    snap = tmp_path / "subnet.json"
    neurons = (
        Neuron(uid=0, hotkey="validator-0", stake=40.0, validator_permit=True),
        Neuron(uid=1, hotkey="validator-1", stake=60.0, validator_permit=True, weights={5: 1.0}),
        Neuron(uid=4, hotkey=hotkey("ana"), stake=1.0),
        Neuron(uid=5, hotkey=hotkey("bo"), stake=1.0),
    )
    write_snapshot(MetagraphSnapshot(netuid=3, block=900, neurons=neurons), snap)
    plain, previewed = tmp_path / "plain.html", tmp_path / "previewed.html"
    report = ["round", "report", "round-0001", "--db", str(db), "--html"]
    assert run_cli([*report, str(plain)]).returncode == 0
    shown = run_cli([*report, str(previewed), "--snapshot", str(snap), "--as", "0"])
    assert shown.returncode == 0, shown.stderr
    assert 'id="consensus"' not in plain.read_text()
    page = previewed.read_text()
    assert 'id="consensus"' in page and "subnet 3 at block 900" in page
    # UID 0 (40% of the stake) puts 0.75/0.25 on UIDs 4/5, UID 1 (60%) all on 5: the
    # consensus is UID 1's row, so UID 0 keeps only its 0.25 on UID 5.
    assert 'vtrust of UID 0</div><div class="big">0.2500' in page
    disagreements = page.split('<table class="disagreements">')[1].split("</table>")[0]
    assert disagreements.count("<tr>") == 3  # the header, miner 4, miner 5
    assert disagreements.index("+0.7500") < disagreements.index("-0.7500")
    # A [chain] hotkey that is no address and no --as: the report asks which validator.
    asked = run_cli([*report, str(previewed), "--snapshot", str(snap)])
    assert asked.returncode == 2 and "--as UID" in asked.stderr
