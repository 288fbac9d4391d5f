"""The `[chain]` table of round.toml, with flags over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.validator.config import ChainConfig, ConfigError, chain_config, load_config


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
