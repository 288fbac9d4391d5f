"""SSSA signing and offline verification, on a body shaped like an exported one."""

from __future__ import annotations

import copy
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.attest import keys
from assay.attest.sssa import SssaError, sign_sssa, verify_file, verify_sssa

BODY: dict[str, Any] = {
    "format": "assay-sssa/1",
    "round": {"round_id": "round-0001", "validator_id": "local", "mechanism_version": "1.1.0"},
    "track": "skills",
    "artifact": {"task_id": "café-sync", "bundle_sha256": "a" * 64, "nonce": "b" * 64},
    "reps": {"total": 3, "completed": 2, "representative": 0},
    "verdict": {"decision": "BLOCK", "risk_score": 87.5, "confidence": 0.9, "summary": "Å ok"},
    "evidence": {
        "action_plane": {"capabilities": [{"capability": "READ_SSH_KEY", "evidence_ref": "x:1"}]},
        "context_plane": {"injected_instructions": [{"file": "SKILL.md", "line": 3}]},
    },
    "findings": [{"category": "credential_theft", "severity": "HIGH", "title": "reads keys"}],
    "policy": {"deny": ["READ_SSH_KEY"]},
}
IDENTITY = {"agent_hash": "c" * 64, "author_key": None, "mechanism_digest": "d" * 64}


@pytest.fixture
def signed(validator_key: Ed25519PrivateKey) -> dict[str, Any]:
    return sign_sssa(copy.deepcopy(BODY), dict(IDENTITY), validator_key)  # type: ignore[no-any-return]


def test_round_trip(signed: dict[str, Any], validator_key: Ed25519PrivateKey) -> None:
    verified = verify_sssa(signed, validator_key=keys.public_hex(validator_key))
    assert (verified.decision, verified.task_id, verified.agent_hash) == (
        "BLOCK",
        "café-sync",
        "c" * 64,
    )


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    return [path]


def _changed(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return not value
    if isinstance(value, int | float):
        return value + 1
    return value + "x"


def _tampered(doc: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = _changed(node[path[-1]])
    return out


@pytest.mark.parametrize("path", _leaves(BODY), ids=lambda p: ".".join(map(str, p)))
def test_changing_any_body_value_names_its_field(
    signed: dict[str, Any], path: tuple[Any, ...]
) -> None:
    with pytest.raises(SssaError, match=f"field '{path[0]}' does not match its signed hash"):
        verify_sssa(_tampered(signed, path))


@pytest.mark.parametrize(
    "name", ["agent_hash", "author_key", "validator_key", "mechanism_digest", "signature"]
)
def test_changing_the_attestation_fails_the_signature(signed: dict[str, Any], name: str) -> None:
    tampered = copy.deepcopy(signed)
    tampered["attestation"][name] = "0" * 64 if name != "signature" else "00" * 64
    with pytest.raises(SssaError, match="signature"):
        verify_sssa(tampered)


def test_rehashing_a_changed_field_still_fails_the_signature(signed: dict[str, Any]) -> None:
    from assay.attest.canonical import canonical_digest

    tampered = copy.deepcopy(signed)
    tampered["verdict"]["decision"] = "ALLOW"
    body = {k: v for k, v in tampered.items() if k != "attestation"}
    tampered["attestation"]["field_hashes"]["verdict"] = canonical_digest(tampered["verdict"])
    tampered["attestation"]["canonical_hash"] = canonical_digest(body)
    with pytest.raises(SssaError, match=r"^signature: signature does not verify"):
        verify_sssa(tampered)


def test_added_and_removed_fields_are_named(signed: dict[str, Any]) -> None:
    with pytest.raises(SssaError, match="field 'bonus' was added after signing"):
        verify_sssa({**signed, "bonus": 1})
    without = {k: v for k, v in signed.items() if k != "policy"}
    with pytest.raises(SssaError, match="field 'policy' was removed"):
        verify_sssa(without)
    with pytest.raises(SssaError, match="not an SSSA"):
        verify_sssa(BODY)


def test_wrong_validator_key(signed: dict[str, Any]) -> None:
    other = keys.public_hex(Ed25519PrivateKey.generate())
    with pytest.raises(SssaError, match="is not the expected key"):
        verify_sssa(signed, validator_key=other)


def test_re_signed_by_someone_else_is_caught_by_the_pinned_key(
    signed: dict[str, Any], validator_key: Ed25519PrivateKey
) -> None:
    forged = sign_sssa(BODY | {"verdict": None}, dict(IDENTITY), Ed25519PrivateKey.generate())
    verify_sssa(forged)  # self-consistent...
    with pytest.raises(SssaError, match="not the expected key"):
        verify_sssa(forged, validator_key=keys.public_hex(validator_key))  # ...but not ours


def _nfd(value: Any) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, dict):
        return {_nfd(k): _nfd(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_nfd(v) for v in value]
    return value


def test_equivalent_non_canonical_json_still_verifies(
    signed: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "pretty.json"
    # Reordered keys, indentation, ASCII escapes, NFD strings, 87.5 -> 8.75e1, 3 -> 3.0.
    text = json.dumps(_nfd(signed), indent=3, ensure_ascii=True)
    text = text.replace("87.5", "8.75e1").replace('"total": 3', '"total": 3.0')
    path.write_text(text)
    assert "Cafe\\u0301".lower() in text.lower() and "8.75e1" in text
    assert verify_file(path).decision == "BLOCK"


def test_duplicate_keys_and_nan_in_a_file_are_refused(
    signed: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(signed)[:-1] + ', "track": "packages"}')
    with pytest.raises(SssaError, match="duplicate key 'track'"):
        verify_file(path)
    path.write_text(json.dumps(signed).replace("87.5", "NaN"))
    with pytest.raises(SssaError, match="NaN is not a JSON number"):
        verify_file(path)
