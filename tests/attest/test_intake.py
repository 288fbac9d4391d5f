"""Which agents a round admits: verified manifests, one per key and track, no copies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.attest.intake import admit_files
from assay.attest.manifest import pin, write_manifest
from assay.mechanism.spec import Track
from assay.records.plan import RoundPlan
from assay.schema.mechanism_file import pinned

AGENTS = Path(__file__).resolve().parents[2] / "agents"
TRACKS = (Track.SKILLS, Track.REPOSITORIES)


def pinned_copy(
    tmp_path: Path, name: str, key: Ed25519PrivateKey, track: Track = Track.SKILLS
) -> Path:
    agent = tmp_path / f"{name}.py"
    if not agent.exists():
        shutil.copy(AGENTS / f"{name}.py", agent)
    path = tmp_path / f"{name}.{track.value}.manifest.json"
    write_manifest(
        pin(
            agent,
            track=track,
            key=key,
            entrypoint="agent_main",
            sandbox_digest="d" * 64,
            manifest_path=path,
        ),
        path,
    )
    return path


@pytest.fixture
def alice() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def test_a_verified_manifest_competes_only_on_its_track(
    tmp_path: Path, alice: Ed25519PrivateKey
) -> None:
    admission = admit_files([], [pinned_copy(tmp_path, "keyword", alice)], TRACKS, pinned())
    (agent,) = admission.agents
    assert admission.refused == {
        agent.agent_hash: {"repositories": "pinned for track skills, not repositories"}
    }
    assert set(admission.manifests) == {agent.agent_hash}


def test_changed_code_is_refused_on_every_track_with_the_reason(
    tmp_path: Path, alice: Ed25519PrivateKey
) -> None:
    manifest = pinned_copy(tmp_path, "keyword", alice)
    with (tmp_path / "keyword.py").open("a") as handle:
        handle.write("\n# changed after pinning\n")
    admission = admit_files([], [manifest], TRACKS, pinned())
    (reasons,) = admission.refused.values()
    assert set(reasons) == {"skills", "repositories"}
    assert "hash mismatch" in reasons["skills"] and admission.manifests == {}


def test_a_later_manifest_of_the_same_key_and_track_supersedes(
    tmp_path: Path, alice: Ed25519PrivateKey
) -> None:
    first = pinned_copy(tmp_path, "coin_flip", alice)
    second = pinned_copy(tmp_path, "keyword", alice)
    other_track = pinned_copy(tmp_path, "block_all", alice, Track.REPOSITORIES)
    admission = admit_files([], [first, second, other_track], TRACKS, pinned())
    by_name = {a.name: a.agent_hash for a in admission.agents}
    assert admission.refused[by_name["coin_flip"]]["skills"].startswith("superseded by keyword")
    assert "skills" not in admission.refused[by_name["keyword"]]
    assert "repositories" not in admission.refused[by_name["block_all"]]


def test_a_renamed_copy_scores_zero_naming_the_original(
    tmp_path: Path, alice: Ed25519PrivateKey, renamed_keyword: bytes
) -> None:
    (tmp_path / "copycat.py").write_bytes(renamed_keyword)
    copy = pinned_copy(tmp_path, "copycat", Ed25519PrivateKey.generate())
    admission = admit_files([AGENTS / "keyword.py"], [copy], TRACKS, pinned())
    by_name = {a.name: a.agent_hash for a in admission.agents}
    reasons = admission.refused[by_name["copycat"]]
    assert set(reasons) == {"skills", "repositories"}
    assert reasons["skills"].startswith("copy screening: 1.000 similar to keyword (")
    assert "submitted first" in reasons["skills"] and by_name["keyword"] not in admission.refused


def test_byte_identical_resubmission_is_one_agent(tmp_path: Path) -> None:
    shutil.copy(AGENTS / "keyword.py", tmp_path / "again.py")
    admission = admit_files([AGENTS / "keyword.py", tmp_path / "again.py"], [], TRACKS, pinned())
    assert [a.name for a in admission.agents] == ["keyword"]
    assert "same code as keyword" in admission.notes[0]


def test_the_plan_stores_admitted_manifests_as_signed_and_reads_them_back(
    tmp_path: Path, alice: Ed25519PrivateKey
) -> None:
    shutil.copy(AGENTS / "keyword.py", tmp_path / "keyword.py")
    path = tmp_path / "keyword.manifest.json"
    signed = pin(tmp_path / "keyword.py", track=Track.SKILLS, key=alice,
                 entrypoint="agent_main", sandbox_digest="d" * 64, manifest_path=path,
                 model="small-model")  # fmt: skip
    write_manifest(signed, path)
    admission = admit_files([AGENTS / "coin_flip.py"], [path], TRACKS, pinned())
    hashes = {a.name: a.agent_hash for a in admission.agents}
    assert admission.requested_model(hashes["keyword"]) == "small-model"
    assert admission.requested_model(hashes["coin_flip"]) is None
    spec = pinned()
    plan = RoundPlan(
        round_seed="ab", validator_id="local", mechanism_version=spec.version,
        mechanism_digest=spec.digest, corpus="c", reps={Track.SKILLS: 1}, tasks=(),
        agents=tuple(sorted(hashes.values())), manifests=admission.manifests,
    )  # fmt: skip
    # As a store keeps it: the manifest's JSON as its author signed it, in the same shape
    # as before manifests were typed, so older stores load.
    stored = json.loads(json.dumps(plan.to_json()))
    assert stored["manifests"] == {hashes["keyword"]: json.loads(path.read_text())}
    assert RoundPlan.from_json(stored).manifests == admission.manifests
