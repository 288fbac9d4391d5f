"""SSSA signing and offline verification, on a body shaped like an exported one."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.attest import keys
from assay.attest.sssa import (
    MAX_SSSA_BYTES,
    SssaBody,
    SssaError,
    sign_sssa,
    verify_file,
    verify_sssa,
)
from assay.schema.canonical import canonical_bytes, canonical_digest

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


def _signed(body: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    sssa = sign_sssa(
        SssaBody.model_validate(body),
        agent_hash="c" * 64,
        author_key=None,
        mechanism_digest="d" * 64,
        key=key,
    )
    return sssa.document()


@pytest.fixture
def signed(validator_key: Ed25519PrivateKey) -> dict[str, Any]:
    document = _signed(BODY, validator_key)
    assert {k: v for k, v in document.items() if k != "attestation"} == BODY  # as written
    return document


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
    forged = _signed(BODY | {"verdict": None}, Ed25519PrivateKey.generate())
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


_REFUSED_FILES: list[tuple[str, Callable[[str], bytes], str]] = [
    ("duplicate key", lambda t: (t[:-1] + ', "track": "packages"}').encode(),
     "duplicate key 'track'"),
    ("NaN", lambda t: t.replace("87.5", "NaN").encode(), "constant NaN"),
    ("Infinity", lambda t: t.replace("87.5", "Infinity").encode(), "constant Infinity"),
    ("-Infinity", lambda t: t.replace("87.5", "-Infinity").encode(), "constant -Infinity"),
    ("overflowing float", lambda t: t.replace("87.5", "1e999").encode(), "not finite"),
    ("overflowing int", lambda t: t.replace('"total": 3', '"total": 1' + "0" * 30).encode(),
     "outside 64 bits"),
    ("not UTF-8", lambda t: t.replace("café", "caf\udce9").encode("utf-8", "surrogateescape"),
     "not UTF-8"),
    ("too deep", lambda t: t[:-1].encode() + b', "x": ' + b"[" * 65 + b"]" * 65 + b"}",
     "nesting depth 66 exceeds 64"),
    ("too big", lambda t: t[:-1].encode() + b', "x": "' + b"a" * MAX_SSSA_BYTES + b'"}',
     f"exceeds {MAX_SSSA_BYTES}"),
    ("not JSON", lambda t: t[:-1].encode(), "not JSON"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("spoiled", "message"), [r[1:] for r in _REFUSED_FILES], ids=[r[0] for r in _REFUSED_FILES]
)
def test_a_file_that_is_not_strict_bounded_json_is_refused(
    signed: dict[str, Any], tmp_path: Path, spoiled: Callable[[str], bytes], message: str
) -> None:
    path = tmp_path / "spoiled.json"
    path.write_bytes(spoiled(json.dumps(signed, ensure_ascii=False)))
    with pytest.raises(SssaError, match=re.escape(message)):
        verify_file(path)


def test_an_unreadable_path_is_an_sssa_error(tmp_path: Path) -> None:
    with pytest.raises(SssaError, match="No such file"):
        verify_file(tmp_path / "absent.json")
    with pytest.raises(SssaError, match="Is a directory"):
        verify_file(tmp_path)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_SIGNED = _signed(BODY, Ed25519PrivateKey.from_private_bytes(bytes(32)))


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every node below the root, leaves and containers alike."""
    children: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    return [p for k, v in children for p in [(*path, k), *_paths(v, (*path, k))]]


def _verified_or_refused(doc: Any) -> None:
    with contextlib.suppress(SssaError):
        verify_sssa(doc, validator_key=_SIGNED["attestation"]["validator_key"])


@settings(deadline=None)
@given(_JSON)
def test_any_json_value_is_refused_with_an_sssa_error(value: Any) -> None:
    with pytest.raises(SssaError):
        verify_sssa(value)
    with pytest.raises(SssaError):
        verify_sssa({**_SIGNED, "attestation": value})


@settings(deadline=None)
@given(st.data())
def test_any_node_of_a_signed_sssa_replaced_or_removed_is_verified_or_refused(
    data: st.DataObject,
) -> None:
    doc = copy.deepcopy(_SIGNED)
    *parents, last = data.draw(st.sampled_from(_paths(doc)))
    node = doc
    for step in parents:
        node = node[step]
    if data.draw(st.booleans()):
        node[last] = data.draw(_JSON)
    else:
        del node[last]
    _verified_or_refused(doc)  # never another exception, whatever the shape


def test_a_signed_document_of_another_shape_verifies_without_a_crash() -> None:
    """Any key can sign anything: only a pinned validator key makes a document trusted,
    so the shape of a self-consistent one is untrusted too."""
    key = Ed25519PrivateKey.generate()
    body = {"track": 5, "artifact": ["x"], "verdict": "BLOCK"}
    unsigned = {
        "agent_hash": "c" * 64,
        "author_key": None,
        "validator_key": keys.public_hex(key),
        "mechanism_digest": "d" * 64,
        "field_hashes": {name: canonical_digest(value) for name, value in body.items()},
        "canonical_hash": canonical_digest(body),
    }
    signature = keys.sign(key, b"assay sssa v1\0", canonical_bytes(unsigned))
    verified = verify_sssa({**body, "attestation": {**unsigned, "signature": signature}})
    assert (verified.track, verified.task_id, verified.decision) == ("5", "None", None)
