"""Making text that agents, artifacts and corpora chose safe for each output format."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def printable(text: str, limit: int = 500) -> str:
    """No control characters (C0, DEL, C1: they move terminals and break XML), bounded."""
    # Lone surrogates (from undecodable file names) cannot be written as UTF-8 or XML.
    text = text.encode("utf-8", "replace").decode("utf-8")
    clean = _CONTROL.sub("?", text).replace("\n", " ")
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def markdown(text: str, limit: int = 500) -> str:
    """Inline Markdown that shows `text` literally: no markup, links or HTML get through."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable(text, limit))
