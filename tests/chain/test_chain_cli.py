"""`assay chain` as a user runs it: a synthetic subnet, a dry run, a set, the preview."""

from __future__ import annotations

import json
from pathlib import Path

from chain_rounds import author, completed_round

from assay.chain.snapshot import read_snapshot
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


def test_serve_with_nothing_submitted_and_its_status(tmp_path: Path) -> None:
    snap = tmp_path / "subnet.json"
    assert run_cli(["chain", "snapshot", "--synthetic", "8", "--out", str(snap)]).returncode == 0
    drop = tmp_path / "drop"
    drop.mkdir()
    status = tmp_path / "status.json"
    config = tmp_path / "round.toml"
    config.write_text(f'[round]\ndb = "rounds.db"\n\n[chain]\nsnapshot = "{snap.name}"\n')
    served = run_cli(
        [
            *("validator", "serve", "--config", str(config), "--drop", str(drop)),
            *("--status", str(status), "--cycles", "1", "--interval", "0"),
        ]
    )
    assert served.returncode == 0, served.stderr
    assert "stopped: round -" in served.stdout
    shown = run_cli(["validator", "status", "--status", str(status), "--json"])
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["phase"] == "stopped"
    missing = run_cli(["validator", "status", "--status", str(tmp_path / "none.json")])
    assert missing.returncode == 2 and "is it serving" in missing.stderr
