"""JavaScript, TypeScript and shell, read with tree-sitter's grammars: lines go only
between top-level statements that start on a line of their own, so never inside a
string, a template literal or a heredoc (a statement spans its heredoc's body)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import tree_sitter
import tree_sitter_bash
import tree_sitter_javascript
import tree_sitter_typescript

from assay.corpus.variants.interface import TextRules


class SyntaxTreeRules(TextRules):
    """One tree-sitter grammar; `verbatim` names node types compared by their whole text
    (their content is data, where an inserted line would change a value)."""

    def __init__(
        self,
        suffixes: tuple[str, ...],
        interpreters: tuple[str, ...],
        language: Callable[[], object],
        comment_prefix: str,
        verbatim: frozenset[str],
        reads_itself: re.Pattern[str],
    ) -> None:
        self.suffixes = suffixes
        self.interpreters = interpreters
        self._language = language
        self._prefix = comment_prefix
        self._verbatim = verbatim
        self._reads_itself = reads_itself

    def _tree(self, text: str) -> tree_sitter.Tree | None:
        parser = tree_sitter.Parser(tree_sitter.Language(self._language()))
        tree = parser.parse(text.encode("utf-8"))
        return None if tree.root_node.has_error else tree

    def points(self, text: str, lines: list[str]) -> tuple[int, ...]:
        tree = self._tree(text)
        if tree is None or self._reads_itself.search(text):
            return ()
        points: list[int] = []
        covered = 0  # rows 0 .. covered-1 hold a statement already (row 0: a hashbang)
        for child in tree.root_node.children:
            row, column = child.start_point
            if row >= covered and row > 0 and not lines[row][:column].strip():
                points.append(row)
            covered = max(covered, child.end_point[0] + 1)
        if text.endswith("\n") or not text:
            points.append(len(lines))
        return tuple(p for p in points if p <= len(lines))

    def comment(self, words: str) -> str:
        return f"{self._prefix} {words}".rstrip()

    def same(self, original: str, variant: str) -> bool:
        before, after = self._tree(original), self._tree(variant)
        if before is None or after is None:
            return False
        return list(self._significant(before.root_node)) == list(self._significant(after.root_node))

    def _significant(self, root: tree_sitter.Node) -> Iterator[tuple[str, bytes]]:
        """Every leaf but comments, and verbatim nodes whole, in order; a stack rather
        than recursion, for hostile nesting depths."""
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "comment":
                continue
            if node.type in self._verbatim or node.child_count == 0:
                yield node.type, node.text or b""
                if node.type in self._verbatim:
                    continue
            stack.extend(reversed(node.children))


_JS_READS_ITSELF = re.compile(r"readFileSync\(\s*__filename")
_JS_VERBATIM = frozenset({"string", "template_string", "regex"})

JAVASCRIPT = SyntaxTreeRules(
    (".js", ".mjs", ".cjs", ".jsx"),
    ("node",),
    tree_sitter_javascript.language,
    "//",
    _JS_VERBATIM,
    _JS_READS_ITSELF,
)
TYPESCRIPT = SyntaxTreeRules(
    (".ts", ".mts", ".cts"),
    ("ts-node", "tsx"),
    tree_sitter_typescript.language_typescript,
    "//",
    _JS_VERBATIM,
    _JS_READS_ITSELF,
)
TSX = SyntaxTreeRules(
    (".tsx",), (), tree_sitter_typescript.language_tsx, "//", _JS_VERBATIM, _JS_READS_ITSELF
)
SHELL = SyntaxTreeRules(
    (".sh", ".bash"),
    ("sh", "bash", "dash"),
    tree_sitter_bash.language,
    "#",
    frozenset({"heredoc_body", "string", "raw_string", "ansi_c_string"}),
    # A script that reads itself (`tail -n +N "$0"`) depends on its own line numbers.
    re.compile(r"\$\{?0\}?|BASH_SOURCE"),
)
