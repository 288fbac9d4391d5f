"""Manifests signed by a miner's sr25519 hotkey (the chain SDK's key library), and the
intake on a subnet: unregistered hotkeys refused, one agent per hotkey and track."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bittensor.wallets import regen_hotkey
from bittensor_core import Keypair

from assay.attest.intake import admit, read_submission
from assay.attest.manifest import ManifestError, pin, verify_manifest, write_manifest
from assay.mechanism.spec import Track
from assay.records.chain import MetagraphSnapshot, Neuron
from assay.schema.mechanism_file import pinned
from assay.validator.subnet import registered_on
from inprocess_cli import run_cli

AGENT = "def agent_main(context):\n    return {'verdict': 'ALLOW', 'findings': []}\n"
# Unlike each other, so copy screening has nothing to say.
SECOND = """import re

def agent_main(context):
    text = " ".join(str(v) for v in context.values())
    hits = re.findall(r"curl|wget|base64", text)
    return {"verdict": "BLOCK" if hits else "WARN", "findings": sorted(set(hits))}
"""
THIRD = """class Scanner:
    limit = 3

    def run(self, files):
        return [f for f in files if f.endswith(".sh")][: self.limit]


def agent_main(context):
    return {"verdict": "WARN", "findings": Scanner().run(list(context))}
"""
MINER = Keypair.create_from_uri("//Miner")
STRANGER = Keypair.create_from_uri("//Stranger")


def signed(tmp_path: Path, name: str, key: Keypair, code: str = AGENT) -> Path:
    agent = tmp_path / f"{name}.py"
    agent.write_text(code)
    path = tmp_path / f"{name}.manifest.json"
    manifest = pin(
        agent,
        track=Track.SKILLS,
        key=key,
        entrypoint="agent_main",
        sandbox_digest="sha256:test",
        manifest_path=path,
    )
    write_manifest(manifest, path)
    return path


def test_a_hotkey_signs_a_manifest_named_by_its_address(tmp_path: Path) -> None:
    submission = read_submission(signed(tmp_path, "a", MINER))
    assert submission.problem is None
    assert submission.verified is not None
    assert submission.verified.author_key == MINER.ss58_address


def test_a_changed_field_or_another_hotkey_does_not_verify(tmp_path: Path) -> None:
    path = signed(tmp_path, "a", MINER)
    data = json.loads(path.read_text())
    manifest = read_submission(path).manifest
    assert manifest is not None
    with pytest.raises(ManifestError, match="bad signature"):
        verify_manifest(manifest.model_copy(update={"track": Track.PACKAGES}), AGENT.encode())
    with pytest.raises(ManifestError, match="bad signature"):
        verify_manifest(
            manifest.model_copy(update={"author_key": STRANGER.ss58_address}), AGENT.encode()
        )
    data["signature"] = "ab" * 64
    path.write_text(json.dumps(data))
    assert "bad signature" in (read_submission(path).problem or "")


def test_on_a_subnet_an_unregistered_hotkey_is_refused_and_a_newer_manifest_wins(
    tmp_path: Path,
) -> None:
    older = read_submission(signed(tmp_path, "v1", MINER))
    newer = read_submission(signed(tmp_path, "v2", MINER, SECOND))
    outsider = read_submission(signed(tmp_path, "x", STRANGER, THIRD))
    # Pinned within the same second: the later submission wins.
    subnet = MetagraphSnapshot(
        netuid=5, block=77, neurons=(Neuron(uid=3, hotkey=MINER.ss58_address, stake=1.0),)
    )
    admission = admit([older, newer, outsider], [Track.SKILLS], pinned(), registered_on(subnet))
    refused = {h: r["skills"] for h, r in admission.refused.items()}
    assert refused[outsider.agent.agent_hash] == (
        f"hotkey {STRANGER.ss58_address} is not registered on subnet 5 at block 77"
    )
    assert "superseded by v2" in refused[older.agent.agent_hash]
    assert newer.agent.agent_hash not in refused


def test_agent_pin_signs_with_a_wallets_hotkey(tmp_path: Path) -> None:
    wallets = tmp_path / "wallets"
    regen_hotkey(name="miner", hotkey="h1", path=str(wallets), seed="0x" + "11" * 32)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    result = run_cli(
        [
            *("agent", "pin", str(agent), "--track", "skills"),
            *("--hotkey", "miner/h1", "--wallet-path", str(wallets)),
        ]
    )
    assert result.returncode == 0, result.stderr
    manifest = read_submission(tmp_path / "agent.skills.manifest.json")
    assert manifest.problem is None and manifest.manifest is not None
    expected = Keypair.create_from_seed(bytes([0x11] * 32)).ss58_address
    assert manifest.manifest.author_key == expected
    # The same agent for a second track: its own manifest, the first one kept.
    packages = run_cli(
        [
            *("agent", "pin", str(agent), "--track", "packages"),
            *("--hotkey", "miner/h1", "--wallet-path", str(wallets)),
        ]
    )
    assert packages.returncode == 0, packages.stderr
    tracks = {p.name: read_submission(p).manifest for p in tmp_path.glob("*.manifest.json")}
    assert {n: m.track.value for n, m in tracks.items() if m} == {
        "agent.skills.manifest.json": "skills",
        "agent.packages.manifest.json": "packages",
    }
    both = run_cli(["agent", "pin", str(agent), "--track", "skills"])
    assert both.returncode == 2 and "--key" in both.stderr
