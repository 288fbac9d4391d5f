"""`assay agent pin --hotkey` finds the wallet where btcli does: `BT_WALLET_PATH`."""

from __future__ import annotations

from pathlib import Path

from bittensor.wallets import regen_hotkey

from assay.attest.intake import read_submission
from inprocess_cli import run_cli

AGENT = "def agent_main(context):\n    return {}\n"


def test_agent_pin_reads_the_wallet_from_bt_wallet_path(tmp_path: Path) -> None:
    wallets = tmp_path / "elsewhere"
    regen_hotkey(name="miner", hotkey="h1", path=str(wallets), seed="0x" + "22" * 32)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    pin = ["agent", "pin", str(agent), "--track", "skills", "--hotkey", "miner/h1"]
    result = run_cli(pin, env={"BT_WALLET_PATH": str(wallets)})
    assert result.returncode == 0, result.stderr
    (written,) = tmp_path.glob("*.manifest.json")
    manifest = read_submission(written).manifest
    assert manifest is not None and manifest.author_key.startswith("5")
    missing = run_cli(
        [*pin, "--out", str(tmp_path / "x.json")], env={"BT_WALLET_PATH": str(tmp_path / "none")}
    )
    assert missing.returncode == 2 and "miner" in missing.stderr
