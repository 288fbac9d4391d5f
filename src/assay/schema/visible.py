"""Text from an artifact, agent, corpus or label, made safe to show a person.

Control characters (C0 but newline and tab, DEL, C1, so ESC and CSI too) and the
invisible format characters that reorder or hide text (bidi overrides and
isolates, zero-width characters) are replaced by visible escapes such as
`\\x1b` or `\\u202e`: nothing shown can clear a screen, fake a colour or a line,
or read differently from what it is.
"""

from __future__ import annotations

import re

_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    return _HIDDEN.sub(_escape, text)
