"""The `[chain]` table of round.toml, with flags over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.validator.config import ChainConfig, ConfigError, chain_config, load_config
from inprocess_cli import run_cli


def test_the_table_with_flags_over_it(tmp_path: Path) -> None:
    config = tmp_path / "round.toml"
    config.write_text(
        '[round]\nvalidator_id = "v"\n\n[chain]\nnetwork = "test"\nnetuid = 4\n'
        'wallet = "val"\nsnapshot = "subnet.json"\n'
    )
    assert chain_config(config) == ChainConfig(
        network="test", netuid=4, wallet="val", snapshot=tmp_path / "subnet.json"
    )
    assert chain_config(config, netuid=7, hotkey="hk", network=None).netuid == 7
    # The round's own table ignores [chain].
    assert load_config(config).validator_id == "v"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("netuid = 1\nwalet = 'x'\n", "unknown keys in \\[chain\\]: \\['walet'\\]"),
        ("netuid = -1\n", "netuid"),
        ("netuid = true\n", "netuid"),
        ("netuid = 1\nhotkey = 5\n", "hotkey must be a string"),
    ],
)
def test_mistakes_are_named(tmp_path: Path, table: str, message: str) -> None:
    config = tmp_path / "round.toml"
    config.write_text("[chain]\n" + table)
    with pytest.raises(ConfigError, match=message):
        chain_config(config)


def test_no_file_is_the_defaults() -> None:
    assert chain_config(None) == ChainConfig()


def test_a_round_with_a_live_subnet_configured_reads_it_first(tmp_path: Path) -> None:
    """`[chain]` naming a live subnet makes `round run` a chain-mode round: it reads the
    subnet (for the anchor of the shared draw) before planning, and a chain it cannot
    reach stops it as an infrastructure fault, with nothing planned."""
    config = tmp_path / "round.toml"
    config.write_text('[round]\ndb = "r.db"\n\n[chain]\nnetwork = "ws://127.0.0.1:9"\nnetuid = 3\n')
    agent = Path(__file__).resolve().parents[2] / "agents" / "keyword.py"
    done = run_cli(["round", "run", "--config", str(config), "--agent", str(agent), "--tasks", "1"])
    assert done.returncode == 3 and "cannot read the chain for a chain-mode round" in done.stderr
    assert not (tmp_path / "r.db").exists()
