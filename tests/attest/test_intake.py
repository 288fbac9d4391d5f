"""Which agents a round admits: verified manifests, one per key and track, no copies."""

from __future__ import annotations

import base64
import json
import shutil
import zlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.attest import keys
from assay.attest.intake import Admission, Submission, admit, admit_files, read_submission
from assay.attest.manifest import pin, write_manifest
from assay.mechanism.spec import Track
from assay.records.plan import RoundPlan
from assay.schema.manifest import AgentManifest
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store
from assay.validator.arrivals import StoreArrivals

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
    assert reasons["skills"].startswith(
        "copy screening: the same code, once normalised, as keyword ("
    )
    assert "arrived first" in reasons["skills"] and by_name["keyword"] not in admission.refused


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


def _submission(tmp_path: Path, name: str, code: bytes, key: Ed25519PrivateKey,
                track: Track = Track.SKILLS) -> Submission:  # fmt: skip
    (tmp_path / f"{name}.py").write_bytes(code)
    return read_submission(pinned_copy(tmp_path, name, key, track))


def _reasons(admission: Admission, sub: Submission) -> dict[str, str]:
    return admission.refused.get(sub.agent.agent_hash, {})


def test_one_owner_enters_the_same_code_on_two_tracks(
    tmp_path: Path, alice: Ed25519PrivateKey
) -> None:
    skills = read_submission(pinned_copy(tmp_path, "keyword", alice, Track.SKILLS))
    repos = read_submission(pinned_copy(tmp_path, "keyword", alice, Track.REPOSITORIES))
    admission = admit([skills, repos], TRACKS, pinned())
    (agent,) = admission.agents
    assert admission.refused == {}
    assert set(admission.entries[agent.agent_hash]) == {"skills", "repositories"}


def test_a_second_owner_of_byte_identical_code_is_refused_on_its_track(
    tmp_path: Path, alice: Ed25519PrivateKey
) -> None:
    original = read_submission(pinned_copy(tmp_path, "keyword", alice, Track.SKILLS))
    copy = read_submission(
        pinned_copy(tmp_path, "keyword", Ed25519PrivateKey.generate(), Track.REPOSITORIES)
    )
    admission = admit([original, copy], TRACKS, pinned())
    reasons = _reasons(admission, original)
    assert "skills" not in reasons and "copy screening" in reasons["repositories"]
    assert set(admission.entries[original.agent.agent_hash]) == {"skills"}


def _author_first(
    tmp_path: Path, alice: Ed25519PrivateKey, renamed_keyword: bytes
) -> tuple[Submission, Submission, Path]:
    """The author's keyword admitted alone into a store; a renamed copy not yet seen."""
    author = _submission(tmp_path, "keyword", (AGENTS / "keyword.py").read_bytes(), alice)
    copier = _submission(tmp_path, "copycat", renamed_keyword, Ed25519PrivateKey.generate())
    db = tmp_path / "rounds.db"
    with Store(db) as store:
        first = admit([author], TRACKS[:1], pinned(), arrivals=StoreArrivals(store))
    assert first.refused == {}
    return author, copier, db


def test_first_arrival_wins_across_restarts_whatever_the_order_given(
    tmp_path: Path, alice: Ed25519PrivateKey, renamed_keyword: bytes
) -> None:
    author, copier, db = _author_first(tmp_path, alice, renamed_keyword)
    with Store(db) as store:  # a restart; the copier listed (and named) first
        later = admit([copier, author], TRACKS[:1], pinned(), arrivals=StoreArrivals(store))
    assert _reasons(later, author) == {}
    assert "as keyword (" in _reasons(later, copier)["skills"]


def test_the_original_counts_after_it_left_the_drop(
    tmp_path: Path, alice: Ed25519PrivateKey, renamed_keyword: bytes
) -> None:
    author, copier, db = _author_first(tmp_path, alice, renamed_keyword)
    with Store(db) as store:
        alone = admit([copier], TRACKS[:1], pinned(), arrivals=StoreArrivals(store))
    assert "an agent of " + author.owner in _reasons(alone, copier)["skills"]


def test_a_refused_submission_never_makes_another_a_copy(
    tmp_path: Path, alice: Ed25519PrivateKey, renamed_keyword: bytes
) -> None:
    author = _submission(tmp_path, "keyword", (AGENTS / "keyword.py").read_bytes(), alice)
    stranger = Ed25519PrivateKey.generate()
    unregistered = _submission(tmp_path, "copycat", renamed_keyword, stranger)
    big = Ed25519PrivateKey.generate()
    oversized = _submission(
        tmp_path, "big", renamed_keyword + b"#" * pinned().sandbox.agent_code_bytes, big,
        Track.REPOSITORIES,
    )  # fmt: skip

    def registered(manifest: AgentManifest) -> str | None:
        return None if manifest.author_key != keys.public_hex(stranger) else "not registered"

    admission = admit([unregistered, oversized, author], TRACKS, pinned(), registered)
    assert _reasons(admission, author) == {
        "repositories": "pinned for track skills, not repositories"
    }
    assert _reasons(admission, unregistered)["skills"] == "not registered"
    assert "over the 262144-byte code cap" in _reasons(admission, oversized)["repositories"]


def test_padded_and_packed_copies_are_refused_and_a_poisoned_one_costs_itself(
    tmp_path: Path, alice: Ed25519PrivateKey, renamed_keyword: bytes
) -> None:
    author = _submission(tmp_path, "keyword", (AGENTS / "keyword.py").read_bytes(), alice)
    padding = "".join(f"def pad_{i}(x):\n    return x + {i}\n" for i in range(400))
    padded = _submission(tmp_path, "padded", renamed_keyword + padding.encode(),
                         Ed25519PrivateKey.generate())  # fmt: skip
    blob = base64.b64encode(zlib.compress(renamed_keyword)).decode()
    unpack = f"import base64, zlib\nexec(zlib.decompress(base64.b64decode({blob!r})))\n"
    packed = _submission(tmp_path, "packed", unpack.encode(), Ed25519PrivateKey.generate())
    poison = b"X = " + b" + ".join(b'"a"' for _ in range(20_000)) + b"\n"
    poisoned = _submission(tmp_path, "poisoned", poison, Ed25519PrivateKey.generate())
    honest = _submission(tmp_path, "coin_flip", (AGENTS / "coin_flip.py").read_bytes(),
                         Ed25519PrivateKey.generate())  # fmt: skip
    admission = admit([poisoned, author, padded, packed, honest], TRACKS[:1], pinned())
    assert _reasons(admission, author) == {} and _reasons(admission, honest) == {}
    assert _reasons(admission, padded)["skills"].startswith(
        "copy screening: contains 1.000 of keyword"
    )
    assert "builds code from data at import time" in _reasons(admission, packed)["skills"]
    assert "could not read it (RecursionError)" in _reasons(admission, poisoned)["skills"]
