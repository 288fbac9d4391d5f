"""`assay agent bundle`: one self-contained agent file from a multi-module agent package.

The contract runs one Python file, so a package is carried inside it: every module's
source in a table, served by an import hook the file installs before importing the
package. Relative and absolute imports inside the package both work, tracebacks name
the original module, and the output depends only on the package's files (sorted paths,
each source as one literal), so the same package always bundles to the same bytes and
hence the same agent identity.

A source is written as a raw triple-quoted literal where one reads back as exactly that
source: its line breaks and its regular expressions' backslashes then cost one byte each,
as in the package, where `repr` spends two on each (about 9 KB of the reference agent).
A source no raw literal holds (one with both kinds of triple quote, or a trailing
backslash) is written by `repr`.

A module indented by fours has its blocks indented one space a level in the bundle (about
30 KB of the reference agent is indentation): lines inside multi-line strings are kept,
line numbers too, and the result is used only when it parses to exactly the original's
syntax tree. The package stays the source to read and edit.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

_LOADER = """
import importlib as _importlib
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys


class _Bundle(_abc.MetaPathFinder, _abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name not in _MODULES:
            return None
        return _util.spec_from_loader(name, self, is_package=_MODULES[name][0])

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source = _MODULES[module.__name__][1]
        exec(compile(source, "<bundled " + module.__name__ + ">", "exec"), module.__dict__)


def _load():
    # A package of the same name imported earlier in this process is not ours: drop it.
    for name in [n for n in _sys.modules if n == _PACKAGE or n.startswith(_PACKAGE + ".")]:
        del _sys.modules[name]
    _sys.meta_path.insert(0, _Bundle())
    return _importlib.import_module(_PACKAGE)
"""


class BundleError(ValueError):
    """The package cannot be bundled; the message names the file and the reason."""


@dataclass(frozen=True)
class Bundle:
    code: bytes
    modules: tuple[str, ...]


def _module_name(package: str, rel: Path) -> tuple[str, bool]:
    parts = [package, *rel.with_suffix("").parts]
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    for part in parts:
        if not part.isidentifier():
            raise BundleError(f"{rel}: {part!r} is not a module name")
    return ".".join(parts), is_package


def _exports(source: str, entrypoint: str) -> bool:
    """Whether the package's `__init__` binds the entrypoint at top level."""
    bound: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            bound.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Assign):
            bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return entrypoint in bound


def entrypoint_problem(code: bytes, entrypoint: str) -> str | None:
    """Why `code` cannot run as an agent, read without running it: not UTF-8 Python, or
    no top-level `entrypoint`. None when it can."""
    try:
        found = _exports(code.decode("utf-8"), entrypoint)
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # a NUL byte in the source
        return str(exc)
    return None if found else f"defines no top-level {entrypoint!r}"


def _shallow(source: str) -> str:
    """`source` indented a quarter as deep (lines inside a multi-line string kept as they
    are) when the syntax tree that parses to is exactly the original's, else `source`
    unchanged (a module not indented by fours). Line numbers are kept."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        original = ast.dump(ast.parse(source))
    except (tokenize.TokenError, SyntaxError, ValueError, IndentationError):
        return source
    inside = {row for t in tokens for row in range(t.start[0] + 1, t.end[0] + 1)}
    lines = source.splitlines(keepends=True)
    out = []
    for number, line in enumerate(lines, 1):
        body = line.lstrip(" ")
        width = len(line) - len(body)
        # Inside brackets any indentation reads the same; a block's is checked below.
        out.append(line if number in inside or not body.strip() else " " * (width // 4) + body)
    shallow = "".join(out)
    try:
        same = ast.dump(ast.parse(shallow)) == original
    except (SyntaxError, ValueError):
        same = False
    return shallow if same else source


def _literal(source: str) -> str:
    """The shortest Python literal whose value is exactly `source`."""
    candidates = [repr(source), f"r'''{source}'''", f'r"""{source}"""']
    return min((c for c in candidates if _reads_back(c, source)), key=len)


def _reads_back(literal: str, source: str) -> bool:
    try:
        return bool(ast.literal_eval(literal) == source)
    except (SyntaxError, ValueError):
        return False


def bundle_package(directory: Path, entrypoint: str = "agent_main", *, max_bytes: int) -> Bundle:
    """The single-file agent for the package at `directory` (which holds `__init__.py`)."""
    package = directory.resolve().name
    if not (directory / "__init__.py").is_file():
        raise BundleError(f"{directory}: not a package (no __init__.py)")
    modules: dict[str, tuple[bool, str]] = {}
    for path in sorted(directory.rglob("*.py")):
        rel = path.relative_to(directory)
        if "__pycache__" in rel.parts:
            continue
        if path.is_symlink():
            raise BundleError(f"{rel}: symlinks are not bundled")
        try:
            source = path.read_text(encoding="utf-8")
            compile(source, str(rel), "exec")
        except (UnicodeDecodeError, SyntaxError, ValueError) as exc:
            raise BundleError(f"{rel}: {exc}") from exc
        name, is_package = _module_name(package, rel)
        modules[name] = (is_package, _shallow(source))
    if not _exports(modules[package][1], entrypoint):
        raise BundleError(f"{directory / '__init__.py'}: does not define {entrypoint!r}")
    table = "".join(
        f"    {name!r}: ({is_pkg!r}, {_literal(source)}),\n"
        for name, (is_pkg, source) in sorted(modules.items())
    )
    text = (
        f'"""The {package} agent, bundled from {len(modules)} modules by `assay agent bundle`;'
        ' edit the package, not this file."""\n'
        f"{_LOADER}\n\n_PACKAGE = {package!r}\n_MODULES = {{\n{table}}}\n\n"
        f"{entrypoint} = _load().{entrypoint}\n"
    )
    code = text.encode("utf-8")
    if len(code) > max_bytes:
        raise BundleError(f"bundle of {len(code)} bytes exceeds the {max_bytes}-byte agent limit")
    return Bundle(code, tuple(sorted(modules)))
