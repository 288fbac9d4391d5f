"""Making text that agents, artifacts and corpora chose safe for each output format."""

from __future__ import annotations

import re

from assay.schema.visible import visible

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


def printable(text: str, limit: int = 500) -> str:
    """One line, control and invisible characters as visible escapes, bounded."""
    # Lone surrogates (from undecodable file names) cannot be written as UTF-8 or XML.
    text = text.encode("utf-8", "replace").decode("utf-8")
    clean = visible(text.replace("\n", " ").replace("\t", " "))
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def markdown(text: str, limit: int = 500) -> str:
    """Inline Markdown that shows `text` literally: no markup, links or HTML get through."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", printable(text, limit))
