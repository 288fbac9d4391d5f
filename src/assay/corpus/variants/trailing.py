"""Formats with no comment every reader accepts (Markdown, JSON, manifests, Go): blank
lines (empty, or spaces or a tab alone) at the very end only, which no line of the file
moves for and no parser reads."""

from __future__ import annotations

import json
import tomllib

from assay.corpus.variants.interface import TextRules


class TrailingRules(TextRules):
    suffixes = (
        ".md", ".markdown", ".txt", ".rst", ".json", ".toml", ".cfg", ".ini",
        ".yaml", ".yml", ".html", ".go", ".mod", ".c", ".cc", ".cpp", ".h", ".gyp",
        ".pth",  # site.py skips a .pth file's blank lines
    )  # fmt: skip
    names = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS", "README", "CHANGELOG")

    def handles(self, name: str, text: str) -> bool:
        return super().handles(name, text) or name.rsplit("/", 1)[-1] in self.names

    def points(self, text: str, lines: list[str]) -> tuple[int, ...]:
        # A YAML block scalar kept with `|+` would take the new blank lines as its own.
        keeps_trailing = any(mark in text for mark in ("|+", ">+"))
        return () if keeps_trailing or not text else (len(lines),)

    def same(self, original: str, variant: str) -> bool:
        if not variant.startswith(original) or variant[len(original) :].strip():
            return False
        for parse in (json.loads, tomllib.loads):
            try:
                parsed = parse(original)
            except ValueError:
                continue
            return bool(parse(variant) == parsed)
        return True
