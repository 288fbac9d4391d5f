"""Every other text file (Markdown, JSON, manifests, Go, a base64 payload, a hook script
without a `#!` line): blank lines (empty, or spaces or a tab alone) at the very end only,
which no line of the file moves for and no reader of these formats takes as content.
Patches and checksum lists are left alone: their tools read every line."""

from __future__ import annotations

import json
import tomllib

from assay.corpus.variants.interface import TextRules

_LEFT_ALONE = (".patch", ".diff", ".sum", ".sha256", ".sha512", ".md5")


class TrailingRules(TextRules):
    def handles(self, name: str, text: str) -> bool:
        return not name.lower().endswith(_LEFT_ALONE)

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
