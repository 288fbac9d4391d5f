from __future__ import annotations

import json
import unicodedata

import pytest

from assay.schema.canonical import CanonicalError, canonical_bytes, canonical_digest


def test_sorted_compact_utf8() -> None:
    assert canonical_bytes({"b": [1, 2.5, None, True], "a": "é"}) == (
        '{"a":"é","b":[1,2.5,null,true]}'.encode()
    )


def test_equivalent_documents_share_a_digest() -> None:
    nfc = {"verdict": {"summary": "café", "risk_score": 50}, "k": "x"}
    other = json.loads('{ "k" : "x",\n "verdict": {"risk_score": 50.0, "summary": "cafe\\u0301"} }')
    assert canonical_digest(nfc) == canonical_digest(other)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Å", "A\u030a"),  # precomposed vs combining ring
        ("\u212b", "Å"),  # ANGSTROM SIGN is canonically equivalent to Å
        ("한", "\u1112\u1161\u11ab"),  # Hangul syllable vs conjoining jamo
        ("ệ", "e\u0323\u0302"),  # two combining marks in non-canonical order
    ],
)
def test_canonically_equivalent_strings_agree_as_values_and_keys(a: str, b: str) -> None:
    assert canonical_bytes({a: a}) == canonical_bytes({b: b})
    assert canonical_bytes(a).decode() == json.dumps(
        unicodedata.normalize("NFC", a), ensure_ascii=False
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [("ﬁ", "fi"), ("①", "1"), ("Ａ", "A"), ("\u200b", "")],  # compatibility, not canonical
)
def test_only_canonical_equivalence_is_folded(a: str, b: str) -> None:
    assert canonical_bytes(a) != canonical_bytes(b)


def test_keys_colliding_after_nfc_are_refused() -> None:
    with pytest.raises(CanonicalError, match="collide"):
        canonical_bytes({"é": 1, "e\u0301": 2})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_refused(value: float) -> None:
    with pytest.raises(CanonicalError, match="not a JSON number"):
        canonical_bytes({"x": [value]})


def test_lone_surrogate_is_refused() -> None:
    with pytest.raises(CanonicalError, match="surrogate"):
        canonical_bytes({"x": "\ud800"})


def test_non_json_types_are_refused() -> None:
    with pytest.raises(CanonicalError, match="bytes"):
        canonical_bytes({"x": b"raw"})
    with pytest.raises(CanonicalError, match="not a string"):
        canonical_bytes({1: "x"})


def test_large_floats_stay_floats() -> None:
    assert canonical_bytes(1e300) == b"1e+300"
    assert canonical_bytes(2.0**60) == repr(2.0**60).encode()
