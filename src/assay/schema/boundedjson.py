"""JSON from an untrusted source, parsed with size and nesting limits.

The nesting depth is measured on the raw text (string literals removed by one
regular expression, brackets counted with a running sum) before the standard
parser sees it, so a document nested 100,000 deep is refused without recursion.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64
# Integers must fit in 64 bits: what SQLite, JavaScript consumers (almost) and
# every signer agree on. Bigger ones are refused before `int()` ever sees them.
_MAX_INT_DIGITS = 19
_INT_RANGE = range(-(2**63), 2**63)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonLimitError(ValueError):
    """The document is not UTF-8 JSON within the size and depth limits."""


def nesting_depth(text: str) -> int:
    structural = _STRING.sub("", text)
    steps = (_STEP[b] for b in _BRACKET.findall(structural))
    return max(accumulate(steps, initial=0))


def _reject_constant(name: str) -> Any:
    raise JsonLimitError(f"non-standard JSON constant {name}")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS or int(text) not in _INT_RANGE:
        raise JsonLimitError(f"integer of {len(text)} characters is outside 64 bits")
    return int(text)


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JsonLimitError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonLimitError(f"number {text[:40]} is not finite")
    return value


def parse_bounded(
    raw: bytes,
    *,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    strict: bool = False,
) -> Any:
    """`strict` also refuses duplicate object keys and numbers that overflow to
    infinity (what hand-written documents such as labels must never contain)."""
    if len(raw) > max_bytes:
        raise JsonLimitError(f"document of {len(raw)} bytes exceeds {max_bytes}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonLimitError(f"not UTF-8: {exc}") from exc
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JsonLimitError(f"nesting depth {depth} exceeds {max_depth}")
    try:
        if strict:
            return json.loads(
                text,
                parse_constant=_reject_constant,
                parse_int=_bounded_int,
                object_pairs_hook=_unique_object,
                parse_float=_finite_float,
            )
        return json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int)
    except JsonLimitError:
        raise
    except (ValueError, RecursionError) as exc:
        raise JsonLimitError(f"not JSON: {exc}") from exc
