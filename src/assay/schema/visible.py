"""Text from an artifact, agent, corpus or label, made safe to show a person.

Control characters (C0 but newline and tab, DEL, C1, so ESC and CSI too), every
Unicode format character (bidi overrides and isolates, zero-width characters, the
Arabic letter mark, word joiners, TAG characters), line and paragraph separators,
and variation selectors are replaced by visible escapes such as `\\x1b`, `\\u202e`
or `\\U000e0041`: nothing shown can clear a screen, fake a colour or a line, carry
hidden words, or read differently from what it is.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Printable ASCII, newline and tab: most text, and none of it needs a look-up.
_PLAIN = re.compile("[\t\n\x20-\x7e]*")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


@lru_cache(maxsize=4096)
def _shown(char: str) -> str:
    code = ord(char)
    hidden = char not in "\t\n" and (
        unicodedata.category(char) in _HIDDEN_CATEGORIES
        or 0xFE00 <= code <= 0xFE0F  # variation selectors
        or 0xE0100 <= code <= 0xE01EF  # variation selectors supplement
    )
    if not hidden:
        return char
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    if _PLAIN.fullmatch(text):
        return text
    return "".join(map(_shown, text))
