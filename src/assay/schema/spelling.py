"""Regular expressions for the spellings the report models forgive, for the exported schema.

The models read a decision, a severity or a capability name as
`value.strip().upper()` (capabilities also with `-` and spaces as `_`). JSON
Schema has no case-insensitive enum, so the exported schema carries a pattern
that accepts exactly those spellings: built here from the words themselves and
from what `str.upper()` does to every code point (it turns `ı` into `I` and `ß`
into `SS`), so the schema and the models cannot disagree on a spelling.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from functools import cache


@cache
def _upper_to() -> dict[str, tuple[str, ...]]:
    """For each upper-case spelling made of ASCII letters, the characters that upper to it."""
    found: dict[str, list[str]] = {}
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        upper = char.upper()
        if upper.isascii() and upper.isalpha():
            found.setdefault(upper, []).append(char)
    return {upper: tuple(chars) for upper, chars in found.items()}


def _spellings(word: str, separators: str) -> str:
    """A regex for every string whose `.upper()` (separators read as `_`) is `word`."""

    def at(i: int) -> str:
        if i == len(word):
            return ""
        if word[i] == "_":
            return _separator_class(separators) + at(i + 1)
        options = []
        for upper, chars in _upper_to().items():
            if word.startswith(upper, i):
                options.append((upper, chars))
        if not options:
            return re.escape(word[i]) + at(i + 1)
        branches = [
            _char_class(chars) + at(i + len(upper))
            for upper, chars in sorted(options, key=lambda o: len(o[0]))
        ]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return at(0)


def _char_class(chars: tuple[str, ...]) -> str:
    # Letters only: nothing to escape, in Python's regular expressions or ECMA 262's.
    return chars[0] if len(chars) == 1 else "[" + "".join(chars) + "]"


def _separator_class(separators: str) -> str:
    others = "".join(sorted(set(separators) - {"-", "_"}))
    return "[_" + others + ("-" if "-" in separators else "") + "]"


def forgiving_pattern(words: Iterable[str], separators: str = "") -> str:
    """An anchored pattern: one of `words`, any case, surrounded by any whitespace
    (`separators` are also read as `_`)."""
    body = "|".join(_spellings(w, separators) for w in sorted(set(words)))
    return rf"^\s*(?:{body})\s*$"
