"""The records' one serialiser: msgspec, to and from JSON.

Every record is a msgspec struct (or a frozen dataclass msgspec reads the same
way). The contract's own pydantic models travel inside records unchanged (an
accepted agent report, a verified manifest, the `[inference]` table): they are
written as their JSON and validated again by their model when read back, so a
stored row can never hold what the contract would refuse.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from pydantic import BaseModel

T = TypeVar("T")

# Raised for JSON that is not JSON and for JSON of the wrong shape (its ValidationError).
DecodeError = msgspec.DecodeError


def _enc_hook(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise NotImplementedError(f"cannot serialise {type(value).__name__}")


def _dec_hook(kind: type, value: object) -> object:
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return kind.model_validate(value)
    raise NotImplementedError(f"cannot read {kind!r}")


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode(record: object) -> bytes:
    """The record as JSON bytes (field order as declared)."""
    return _ENCODER.encode(record)


def decode(data: bytes | str, kind: type[T], *, strict: bool = True) -> T:
    """A record of type `kind` from JSON; raises `DecodeError` naming the field."""
    return msgspec.json.decode(data, type=kind, dec_hook=_dec_hook, strict=strict)


def to_builtins(record: object) -> Any:
    """The record as JSON builtins (dicts, lists, strings, numbers), exactly what its
    JSON reads back as (`msgspec.to_builtins` would keep tuples as tuples)."""
    return msgspec.json.decode(encode(record))


def convert(data: object, kind: type[T]) -> T:
    """A record of type `kind` from JSON builtins; raises `DecodeError` naming the field."""
    return msgspec.convert(data, type=kind, dec_hook=_dec_hook)
