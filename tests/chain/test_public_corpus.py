"""A validator on a live network serving a public, bundled corpus is warned at start and
in its status: every label of such a corpus is published, so it is a practice set."""

from __future__ import annotations

from pathlib import Path

from assay.chain.snapshot import SnapshotChain, read_snapshot, synthetic_snapshot, write_snapshot
from assay.validator.config import ChainConfig, RoundConfig, bundled_root, public_corpus_warning
from assay.validator.serve import read_status, serve

LIVE = ChainConfig(network="finney", netuid=7)


def test_a_bundled_corpus_on_a_live_network_is_a_warning(tmp_path: Path) -> None:
    root = bundled_root()
    for public in (root / "corpus", root / "corpus" / "skills"):
        warning = public_corpus_warning(public, LIVE)
        assert warning is not None and "public practice set" in warning
    # A private corpus, a local network or an air-gapped snapshot: nothing to say.
    assert public_corpus_warning(tmp_path, LIVE) is None
    assert public_corpus_warning(root / "corpus", ChainConfig(network="local")) is None
    snapshot = ChainConfig(network="finney", snapshot=tmp_path / "s.json")
    assert public_corpus_warning(root / "corpus", snapshot) is None


def test_the_warning_stays_in_the_serve_status(tmp_path: Path) -> None:
    subnet = tmp_path / "subnet.json"
    write_snapshot(synthetic_snapshot(netuid=2, uids=4, validators=1), subnet)
    (drop := tmp_path / "drop").mkdir()
    status = tmp_path / "status.json"
    config = RoundConfig(corpus=bundled_root() / "corpus", agents=(), db=tmp_path / "rounds.db")
    warning = public_corpus_warning(config.corpus, LIVE)
    assert warning is not None
    me = read_snapshot(subnet).neurons[0].hotkey
    serve(config, SnapshotChain(subnet, me), drop=drop, status_path=status, cycles=1, pause_s=0,
          validator_hotkey=me, notices=(warning,))  # fmt: skip
    assert read_status(status).notices == [warning]
