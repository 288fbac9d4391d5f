"""Copy screening: flag a submitted agent that is a near-duplicate of an earlier one.

Source is normalised before it is compared, so the cheap disguises cost a
copier nothing: comments and docstrings are dropped (they are not in the AST),
formatting is fixed by `ast.unparse`, and every name the file itself defines
(variables, functions, classes, arguments, import aliases, and attributes
spelled like them) becomes one placeholder. Numbering the names instead
(`_v0`, `_v1`...) would let a copier shift every number by adding one
unused variable; a single placeholder keeps the shingles aligned.
Names it does not define (builtins, modules, library attributes) and string
constants are kept: they carry what the agent actually does. The normalised
token stream is cut into overlapping shingles and two agents are compared by
the Jaccard index of their shingle sets.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass

SHINGLE = 5  # tokens per shingle: long enough that shared idioms alone stay rare

_Shingles = frozenset[tuple[str, ...]]


@dataclass(frozen=True)
class Entry:
    """One submission, in the order the validator received them."""

    name: str
    code: bytes


@dataclass(frozen=True)
class CopyFlag:
    copy: str
    original: str  # the earlier submission it is most similar to
    similarity: float

    def describe(self) -> str:
        return (
            f"copy screening: {self.similarity:.3f} similar to {self.original}, "
            f"which was submitted first"
        )


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


class _Normaliser(ast.NodeTransformer):
    def __init__(self, defined: dict[str, str]) -> None:
        self.defined = defined

    def _rename(self, name: str) -> str:
        return self.defined.get(name, name)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            kept = [s for s in body if not _is_docstring(s)]
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
        for attr in ("id", "arg", "attr", "asname"):
            value = getattr(node, attr, None)
            if isinstance(value, str):
                setattr(node, attr, self._rename(value))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            node.name = self._rename(node.name)
        if isinstance(node, ast.Global | ast.Nonlocal):
            node.names = [self._rename(n) for n in node.names]
        return super().generic_visit(node)


PLACEHOLDER = "_n"


def _defined_names(tree: ast.AST) -> dict[str, str]:
    """Names the file binds, each mapped to the placeholder."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.arg):
            names.append(node.arg)
        elif isinstance(node, ast.alias) and node.asname:
            names.append(node.asname)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.append(node.name)
    return dict.fromkeys(names, PLACEHOLDER)


def normalised_tokens(code: bytes) -> list[str]:
    """The token stream two trivially different copies share."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        # Not Python: compare raw words, still without whitespace differences.
        return re.findall(r"\w+|[^\w\s]", code.decode("utf-8", "replace"))
    text = ast.unparse(_Normaliser(_defined_names(tree)).visit(tree))
    skip = {tokenize.NL, tokenize.COMMENT, tokenize.ENCODING, tokenize.ENDMARKER}
    return [
        tok.string or tokenize.tok_name[tok.type]
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type not in skip
    ]


def shingles(code: bytes) -> _Shingles:
    tokens = normalised_tokens(code)
    if len(tokens) < SHINGLE:
        return frozenset({tuple(tokens)})
    return frozenset(tuple(tokens[i : i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1))


def jaccard(a: _Shingles, b: _Shingles) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def similarity(a: bytes, b: bytes) -> float:
    return jaccard(shingles(a), shingles(b))


def screen(entries: Sequence[Entry], threshold: float) -> list[CopyFlag]:
    """Each submission at or above `threshold` to an earlier one, against its closest original."""
    prints = [shingles(e.code) for e in entries]
    flags = []
    for later in range(1, len(entries)):
        scored = [(jaccard(prints[later], prints[i]), -i) for i in range(later)]
        best, neg_index = max(scored)
        if best >= threshold:
            flags.append(CopyFlag(entries[later].name, entries[-neg_index].name, best))
    return flags
