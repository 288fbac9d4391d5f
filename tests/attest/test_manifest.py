from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.attest import keys
from assay.attest.manifest import (
    MAX_MANIFEST_BYTES,
    AgentManifest,
    ManifestError,
    pin,
    read_manifest,
    verify_manifest,
    write_manifest,
)
from assay.mechanism.spec import Track

AGENT = Path(__file__).resolve().parents[2] / "agents" / "keyword.py"


@pytest.fixture
def manifest_file(tmp_path: Path, author_key: Ed25519PrivateKey) -> Path:
    path = tmp_path / "sub" / "keyword.manifest.json"
    path.parent.mkdir()
    manifest = pin(
        AGENT,
        track=Track.SKILLS,
        key=author_key,
        entrypoint="agent_main",
        sandbox_digest="d" * 64,
        manifest_path=path,
    )
    write_manifest(manifest, path)
    return path


def test_round_trip(manifest_file: Path, author_key: Ed25519PrivateKey) -> None:
    manifest = read_manifest(manifest_file)
    assert manifest.agent_path(manifest_file).resolve() == AGENT.resolve()
    assert manifest.author_key == keys.public_hex(author_key)
    verify_manifest(manifest, AGENT.read_bytes())


TAMPERED = [
    ("track", "mcp_servers"),
    ("code_sha256", "0" * 64),
    ("entrypoint", "other_main"),
    ("sandbox_digest", "e" * 64),
    ("author_key", keys.public_hex(Ed25519PrivateKey.generate())),
    ("issued_at", "2020-01-01T00:00:00Z"),
    ("signature", "00" * 64),
]


# Named by field: the generated key differs at each collection, and xdist's workers
# must collect the same test ids.
@pytest.mark.parametrize(("field", "value"), TAMPERED, ids=[field for field, _ in TAMPERED])
def test_tampering_with_any_signed_field_fails_on_the_signature(
    manifest_file: Path, field: str, value: str
) -> None:
    data = json.loads(manifest_file.read_text())
    data[field] = value
    manifest = AgentManifest.model_validate(data)
    with pytest.raises(ManifestError, match="bad signature"):
        verify_manifest(manifest, AGENT.read_bytes())


def test_changed_code_is_a_hash_mismatch(manifest_file: Path) -> None:
    with pytest.raises(ManifestError, match="hash mismatch: manifest pins code_sha256"):
        verify_manifest(read_manifest(manifest_file), AGENT.read_bytes() + b"\n# evil\n")


def test_re_signing_with_another_key_is_not_the_author(
    manifest_file: Path, author_key: Ed25519PrivateKey
) -> None:
    data = json.loads(manifest_file.read_text())
    data["author_key"] = keys.public_hex(Ed25519PrivateKey.generate())  # signature stays
    with pytest.raises(ManifestError, match="did not sign it"):
        verify_manifest(AgentManifest.model_validate(data), AGENT.read_bytes())


def test_malformed_manifests_are_named(tmp_path: Path, manifest_file: Path) -> None:
    data = json.loads(manifest_file.read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**data, "extra": 1}))
    with pytest.raises(ManifestError, match="malformed"):
        read_manifest(bad)
    bad.write_text(manifest_file.read_text().replace('"track"', '"track": "skills", "track"'))
    with pytest.raises(ManifestError, match="duplicate key 'track'"):
        read_manifest(bad)


def test_a_signed_field_with_no_canonical_form_fails_verification(manifest_file: Path) -> None:
    # A `\ud800` escape parses to a lone surrogate, which no signature can have covered.
    manifest_file.write_text(
        manifest_file.read_text().replace('"issued_at": "', '"issued_at": "\\ud800')
    )
    with pytest.raises(ManifestError, match="no canonical form"):
        verify_manifest(read_manifest(manifest_file), AGENT.read_bytes())


def test_an_oversized_manifest_is_malformed(tmp_path: Path, manifest_file: Path) -> None:
    big = tmp_path / "big.manifest.json"
    big.write_text(manifest_file.read_text()[:-2] + ', "pad": "' + "x" * MAX_MANIFEST_BYTES + '"}')
    with pytest.raises(ManifestError, match=r"malformed: document of \d+ bytes exceeds"):
        read_manifest(big)
