"""Making text that agents, artifacts and corpora chose safe for each output format."""

from __future__ import annotations

import re

from assay.schema.visible import visible

_BACKTICKS = re.compile(r"`+")


def printable(text: str, limit: int = 500) -> str:
    """One line, control and invisible characters as visible escapes, bounded."""
    # Lone surrogates (from undecodable file names) cannot be written as UTF-8 or XML.
    text = text.encode("utf-8", "replace").decode("utf-8")
    clean = visible(text.replace("\n", " ").replace("\t", " "))
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def markdown(text: str, limit: int = 500) -> str:
    """`text` as an inline code span, shown literally: inside one nothing is markup, no
    URL or @mention is linked and no HTML is rendered (backslash escapes would leave bare
    URLs and mentions live on a pull request). The fence is longer than any run of
    backticks in the text; a pipe is escaped, which a table cell needs to keep its cells
    (GitHub shows it as `|` there, and as `\\|` in a code span outside a table)."""
    shown = printable(text, limit).replace("|", "\\|")
    if not shown:
        return ""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(shown)), default=0) + 1)
    return f"{fence} {shown} {fence}"
