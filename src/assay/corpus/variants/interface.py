"""What one kind of text file allows a variant to change: where a line may be inserted
without changing what the file means, what that line may say, and a check that the
variant still means the same (a parse of both, compared), so a rule that is wrong
about one file leaves that file as it was rather than changing its behaviour."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

# Lines end as the parsers count them; a file with other breaks (a lone CR, U+2028) is
# left alone rather than have its line numbers disagree with the labels'.
LINE = re.compile(r"[^\r\n]*(?:\r\n|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str] | None:
    """`text` as lines with their endings; None when it has breaks other than LF/CRLF."""
    lines = LINE.findall(text)
    return lines if "".join(lines) == text else None


def interpreter(text: str) -> str | None:
    """The program a `#!` line runs (`#!/usr/bin/env node` and `#!/bin/node`: node)."""
    if not text.startswith("#!"):
        return None
    words = text[2 : text.find("\n")].split()
    if words and words[0].endswith("/env"):
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[0].rsplit("/", 1)[-1] if words else None


class TextRules(ABC):
    """The variant rules of one kind of text file, chosen by its name's suffix, or for a
    script without one (`bin/tool`) by the interpreter its `#!` line names."""

    suffixes: tuple[str, ...] = ()
    interpreters: tuple[str, ...] = ()

    def handles(self, name: str, text: str) -> bool:
        if name.lower().endswith(self.suffixes):
            return True
        base = name.rsplit("/", 1)[-1]
        program = interpreter(text) if "." not in base else None
        return program is not None and program.startswith(self.interpreters or ("\0",))

    @abstractmethod
    def points(self, text: str, lines: list[str]) -> tuple[int, ...]:
        """Indices of lines before which a line may be inserted (`len(lines)`: at the end);
        empty when the file cannot be parsed safely, or reads its own bytes."""

    def comment(self, words: str) -> str | None:
        """A comment line saying `words`, without its ending; None when the format has
        none (only blank lines are inserted)."""
        return None

    @abstractmethod
    def same(self, original: str, variant: str) -> bool:
        """Whether `variant` means what `original` does, judged by a parse of both."""
