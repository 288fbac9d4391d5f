"""Three honest validators in chain mode agree by construction: each with its own store,
secret and id, the same agents, corpus and subnet snapshot give the same task lists, the
same weights and the same UID vector; and every SSSA carries what the draw came from.
(`benchmarks/validator_agreement.py` measures it with the Ray executor and vtrust.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.mechanism.draw import chain_round_seed
from inprocess_cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
# Agents that judge what an artifact does. coin_flip hashes the bytes it is shown, and
# each validator shows its own variant (keyed by its secret), so it is left out here.
AGENTS = ("keyword", "block_all")


def _ok(args: list[str], **kwargs: object) -> str:
    done = run_cli(args, **kwargs)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.sandbox
def test_three_validators_draw_and_weigh_alike(tmp_path: Path) -> None:
    manifests, register = [], []
    for name in AGENTS:
        agent = tmp_path / f"{name}.py"
        agent.write_bytes((ROOT / "agents" / f"{name}.py").read_bytes())
        _ok(["keys", "new", "--out", str(tmp_path), "--name", name])
        key = tmp_path / f"{name}.key"
        _ok(["agent", "pin", str(agent), "--track", "skills", "--key", str(key)])
        manifests += ["--manifest", str(tmp_path / f"{name}.skills.manifest.json")]
        register += ["--register", (tmp_path / f"{name}.pub").read_text().strip()]
    subnet = tmp_path / "subnet.json"
    _ok(
        [
            "chain",
            "snapshot",
            "--synthetic",
            "8",
            "--validators",
            "3",
            *register,
            "--out",
            str(subnet),
        ]
    )

    rounds, vectors = [], []
    for name in ("v-a", "v-b", "v-c"):
        home = tmp_path / name
        db = str(home / "rounds.db")
        run = ["round", "run", *manifests, "--snapshot", str(subnet), "--tracks", "skills"]
        run += ["--tasks", "2", "--db", db, "--secret-file", str(home / "secret")]
        run += ["--validator-id", name, "--jobs", "2", "--json"]
        rounds.append(json.loads(_ok(run, env={"XDG_DATA_HOME": str(home / "data")})))
        dry = ["chain", "weights", rounds[-1]["round_id"], "--snapshot", str(subnet), "--db", db]
        vectors.append(json.loads(_ok([*dry, "--dry-run", "--json"]))["weights"])

    assert len({r["validator_id"] for r in rounds}) == 3
    assert rounds[0]["draw"] == rounds[1]["draw"] == rounds[2]["draw"]
    assert rounds[0]["weights"] == rounds[1]["weights"] == rounds[2]["weights"]
    assert rounds[0]["scores"] == rounds[1]["scores"] == rounds[2]["scores"]
    assert vectors[0] == vectors[1] == vectors[2]

    # Every SSSA names the draw, and the seed is recomputable from what it names.
    out = tmp_path / "sssa"
    home = tmp_path / "v-a"
    export = ["attest", "export", rounds[0]["round_id"], "--db", str(home / "rounds.db")]
    _ok([*export, "--out", str(out)], env={"XDG_DATA_HOME": str(home / "data")})
    documents = [json.loads(p.read_text()) for p in out.rglob("*.json") if p.name != "skipped.json"]
    assert documents
    snapshot = json.loads(subnet.read_text())
    for doc in documents:
        draw = doc["draw"]
        assert (draw["anchor_block"], draw["block_hash"]) == (
            snapshot["anchor_block"],
            snapshot["block_hash"],
        )
        assert draw["round_seed"] == chain_round_seed(draw["block_hash"], draw["corpus_digest"])
        assert draw["round_seed"] == rounds[0]["round_seed"]
