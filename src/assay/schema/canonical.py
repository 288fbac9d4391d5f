"""Canonical JSON: the exact bytes every assay signature and hash is computed over.

Form: strings (keys and values) NFC-normalised, object keys sorted by code
point, no whitespace, UTF-8, no NaN or Infinity, integral floats written as
integers (so `50` and `50.0` agree, as in RFC 8785).

Hand-written on the standard `json` module rather than taken from `rfc8785`
or `canonicaljson`: neither normalises Unicode (RFC 8785 deliberately leaves
strings as they are), so they would not give this form alone, and the whole
form is a dozen lines here without adding a dependency. Non-integral floats
use Python's shortest round-trip repr, which is deterministic.

Signed files are read back by `read_signed`: bounded, and strict about what
would make two readers disagree.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from pathlib import Path
from typing import Any

from assay.schema.boundedjson import parse_bounded

# Beyond 2**53 a float no longer names one integer, so it is kept as a float.
_EXACT_INT = 2**53


class CanonicalError(ValueError):
    """The value has no canonical form (NaN, a key collision after NFC, a lone surrogate...)."""


def _normalised(value: Any, path: str) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalError(f"{path}: {value} is not a JSON number")
        return int(value) if value.is_integer() and abs(value) < _EXACT_INT else value
    if isinstance(value, list | tuple):
        return [_normalised(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return _normalised_object(value, path)
    raise CanonicalError(f"{path}: {type(value).__name__} is not a JSON value")


def _normalised_object(value: dict[Any, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise CanonicalError(f"{path}: key {key!r} is not a string")
        nfc = unicodedata.normalize("NFC", key)
        if nfc in out:
            raise CanonicalError(f"{path}: keys collide after NFC normalisation: {nfc!r}")
        out[nfc] = _normalised(item, f"{path}.{nfc}")
    return out


def canonical_bytes(value: Any) -> bytes:
    """The canonical UTF-8 JSON encoding of a JSON-able value."""
    text = json.dumps(
        _normalised(value, "$"),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalError(f"a string holds a lone surrogate: {exc.reason}") from exc


def canonical_digest(value: Any) -> str:
    """Hex SHA-256 of the canonical encoding."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def read_signed(path: Path, *, max_bytes: int) -> Any:
    """A signed document from a file, read no further than the cap and parsed strictly.

    Raises OSError when it cannot be read and `JsonLimitError` when it is not UTF-8
    JSON within the cap, or holds NaN, Infinity, an overflowing number or a duplicate
    key: readers would disagree on what such a document says, so none is signed.
    """
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    return parse_bounded(raw, max_bytes=max_bytes, strict=True)
