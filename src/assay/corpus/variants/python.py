"""Python: lines go after a logical line ends (a NEWLINE token), so never inside a
string, a docstring or brackets; never before the shebang, the encoding line or the
last `from __future__` import (which must stay first)."""

from __future__ import annotations

import ast
import io
import re
import tokenize

from assay.corpus.variants.interface import TextRules

_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]")
_READS_ITSELF = re.compile(r"open\(\s*__file__|getsource|linecache")
_IGNORED = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT})
_IGNORED |= {tokenize.DEDENT, tokenize.ENDMARKER}


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    try:
        return list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError):
        return None


class PythonRules(TextRules):
    suffixes = (".py", ".pyw")
    interpreters = ("python",)

    def points(self, text: str, lines: list[str]) -> tuple[int, ...]:
        tokens = _tokens(text)
        if tokens is None or _READS_ITSELF.search(text):
            return ()
        if not text:
            return (0,)  # an empty module (a package's __init__.py)
        header = [
            i + 1
            for i, line in enumerate(lines[:2])
            if line.startswith("#!") or _CODING.match(line)
        ]
        first = max(header, default=0)
        ends: list[int] = []
        logical: list[str] = []
        for token in tokens:
            if token.type == tokenize.NEWLINE:
                if logical[:2] == ["from", "__future__"]:
                    first = max(first, token.end[0])
                ends.append(token.end[0])
                logical = []
            elif token.type not in _IGNORED:
                logical.append(token.string)
        return tuple(sorted({row for row in ends if first <= row <= len(lines)}))

    def comment(self, words: str) -> str:
        return f"# {words}".rstrip()

    def same(self, original: str, variant: str) -> bool:
        before, after = _tokens(original), _tokens(variant)
        if before is None or after is None:
            return False
        if _significant(before) != _significant(after):
            return False
        try:
            tree = ast.dump(ast.parse(original))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True  # not Python 3 (a Python 2 setup.py): the token streams decide
        try:
            return tree == ast.dump(ast.parse(variant))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False


def _significant(tokens: list[tokenize.TokenInfo]) -> list[tuple[int, str]]:
    return [(t.type, t.string) for t in tokens if t.type not in _IGNORED]
