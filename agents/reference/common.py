"""Limits, safe file collection, signals, the probe and small shared helpers."""

import ast
import contextlib
import math
import os
import re
import socket
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field

MAX_FILES = 2000
MAX_FILE_BYTES = 1 << 20
MAX_TOTAL_BYTES = 48 << 20
MAX_DEPTH = 24
MAX_FINDINGS = 10
MAX_ITEMS = 64
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".tox", ".mypy_cache"})

BLOCK_AT = 6.0
WARN_AT = 3.0


def words(text: str, separator: str | None = None) -> tuple[str, ...]:
    """A table of words written as one string (a word a line would cost the bundle)."""
    return tuple(text.split(separator))


CODE_SUFFIXES = frozenset(
    {".py", ".pyw", ".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx", ".sh", ".bash", ".zsh", ".go"}
    | {".ps1", ".rb", ".pl", ".php", ".bat", ".cmd"}
)
JS_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx"})
PROSE_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".mdx", ""})

SEVERITY_RANK = {"CRIT": 4, "HIGH": 3, "MED": 2, "LOW": 1}


@dataclass
class Source:
    """One readable text file of the artifact."""

    rel: str
    text: str
    lines: list[str] = field(default_factory=list)

    @property
    def suffix(self) -> str:
        return os.path.splitext(self.rel)[1].lower()

    @property
    def base(self) -> str:
        return os.path.basename(self.rel)

    @property
    def is_python(self) -> bool:
        return self.suffix in (".py", ".pyw") or self.lines[:1] == ["#!/usr/bin/env python3"]

    @property
    def is_js(self) -> bool:
        return self.suffix in JS_SUFFIXES

    @property
    def is_code(self) -> bool:
        if self.suffix in CODE_SUFFIXES:
            return True
        return bool(self.lines) and self.lines[0].startswith("#!")

    @property
    def is_prose(self) -> bool:
        return self.suffix in PROSE_SUFFIXES and not self.is_code


def _read_regular(path: str) -> bytes | None:
    """Bytes of a regular file, never following a symlink; None when unsuitable."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
    except OSError:
        return None


def _decode(data: bytes) -> str | None:
    if b"\0" in data[:8192]:
        return None  # binary: nothing a text scanner can judge
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace")


def collect_files(root: str) -> list[Source]:
    """Text files under root in a stable order, bounded in count, size and depth."""
    out: list[Source] = []
    total = 0
    root = os.path.abspath(root)
    for dirpath, dirnames, names in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        depth = 0 if rel_dir == "." else rel_dir.count(os.sep) + 1
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and depth < MAX_DEPTH
            and not os.path.islink(os.path.join(dirpath, d))
        )
        for name in sorted(names):
            if len(out) >= MAX_FILES or total >= MAX_TOTAL_BYTES:
                return out
            data = _read_regular(os.path.join(dirpath, name))
            text = _decode(data) if data is not None else None
            if text is None:
                continue
            total += len(data or b"")
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            out.append(Source(rel, text, text.splitlines()))
    return out


@dataclass
class Signal:
    """One piece of weighed evidence; those with a category become findings."""

    category: str
    severity: str
    plane: str
    title: str
    file: str | None
    line: int | None
    weight: float
    capability: str | None = None
    technique: str | None = None
    excerpt: str = ""
    finding: bool = True

    def as_finding(self) -> dict:
        item: dict = {
            "category": self.category,
            "severity": self.severity,
            "plane": self.plane,
            "title": self.title,
        }
        if self.file is not None:
            item["file"] = self.file
        if self.line is not None:
            item["line"] = self.line
            item["evidence_ref"] = f"{self.file}:{self.line}"
        return item


def _thread_probe(context: dict) -> None:
    """Prove liveness exactly like the baselines: file, DNS lookup, echo process."""
    probe = context.get("probe")
    if not probe:
        return
    with open(probe["file_path"], "w") as handle:
        handle.write(probe["file_content"])
    with contextlib.suppress(OSError):
        socket.getaddrinfo(probe["dns_host"], 80)
    subprocess.run(["echo", probe["process_echo"]], capture_output=True)


def line_at(text: str, offset: int) -> int:
    """The 1-based number of the line holding `offset`."""
    return text.count("\n", 0, offset) + 1


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def damerau_levenshtein(a: str, b: str) -> int:
    """Optimal string alignment distance (adjacent transpositions cost one)."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, rows[i - 2][j - 2] + 1)
            rows[i][j] = best
    return rows[-1][-1]


def _strip_comment(line: str, source: Source) -> str:
    """The code part of a line: comment-only lines vanish, trailing comments are cut."""
    stripped = line.lstrip()
    if source.is_js or source.suffix == ".go":
        if stripped.startswith(("//", "/*", "*")):
            return ""
        cut = re.search(r"\s//\s", line)
        return line[: cut.start()] if cut and line[: cut.start()].count('"') % 2 == 0 else line
    if stripped.startswith("#") and not stripped.startswith("#!"):
        return ""
    cut = re.search(r"\s#\s", line)
    if cut and line[: cut.start()].count('"') % 2 == 0 and line[: cut.start()].count("'") % 2 == 0:
        return line[: cut.start()]
    return line


def _docstring_lines(tree: ast.AST | None) -> set[int]:
    """Lines of Python docstrings, which describe code rather than being it."""
    lines: set[int] = set()
    if tree is None:
        return lines
    for node in _definitions(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                end = getattr(body[0], "end_lineno", body[0].lineno) or body[0].lineno
                lines.update(range(body[0].lineno, end + 1))
    return lines


def _definitions(tree: ast.AST) -> Iterator[ast.AST]:
    """Statements reachable through statement bodies only (no expression walking)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend(c for c in children if isinstance(c, ast.AST))


def _parse_python(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _bare_string_lines(lines: list[str]) -> set[int]:
    """Lines of triple-quoted strings standing alone as statements (docstrings), found
    without parsing: a string that opens a line is documentation, not code."""
    skip: set[int] = set()
    closing = ""
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if closing:
            skip.add(number)
            if closing in stripped:
                closing = ""
            continue
        opener = re.match(r"[rRuU]?(\"\"\"|\'\'\')", stripped)
        if opener:
            skip.add(number)
            rest = stripped[opener.end() :]
            if opener.group(1) not in rest:
                closing = opener.group(1)
    return skip


def _code_lines(source: Source, tree: ast.AST | None) -> list[tuple[int, str]]:
    if not source.is_python:
        skip: set[int] = set()
    elif tree is not None:
        skip = _docstring_lines(tree)
    else:
        skip = _bare_string_lines(source.lines)
    out = []
    for number, line in enumerate(source.lines, 1):
        if number in skip or len(line) > 4000:
            continue
        # Escaped newlines inside string literals would glue words together.
        code = _strip_comment(line, source).replace("\\n", "  ").replace("\\t", "  ")
        if code.strip():
            out.append((number, code))
    return out


def _string_value(node: ast.AST) -> str | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return None
    return value if isinstance(value, str) else None


def act(
    category: str,
    severity: str,
    title: str,
    rel: str | None,
    line: int | None,
    weight: float,
    cap: str,
) -> Signal:
    """An action-plane signal: what the artifact's code does."""
    return Signal(category, severity, "action", title, rel, line, weight, cap)
