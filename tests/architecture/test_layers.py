"""The layer order of docs/architecture.md, checked on every file of the package.

Read from the source with `ast` (nothing is imported), so an arrow that goes up or
sideways fails here with its file and line rather than surfacing later as an
import cycle or as a record type that drags half the validator in with it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"

# Lowest first. A module may import its own part and any part of a lower layer:
# never a part of its own layer (no sideways arrow) and never one above.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("mechanism", "sandbox"),
    ("schema",),
    ("records",),
    ("corpus", "inference", "detonate"),
    ("runner",),
    ("store", "attest", "report", "chain"),
    ("validator",),
    ("viewer",),
    ("cli",),
    ("__main__",),
)
# Stricter than the order for the outputs and the front end: they read records (and the
# contract's types) and call the validator's entry points, never the stages behind them.
ONLY = {
    "store": ("records", "schema", "mechanism"),
    "attest": ("records", "schema", "mechanism"),
    "report": ("records", "schema", "mechanism"),
    "chain": ("records", "schema", "mechanism"),
    # The viewer is a second front end: it reads through the validator's entry points
    # and renders with the report's own renderer and charts.
    "viewer": ("records", "validator.api", "report"),
    # `assay view` hands the store to the viewer's server: its one door into the viewer.
    "cli": ("records", "validator.api", "viewer.serve"),
}
# Modules directly under src/assay that belong to no part: only the version.
ROOT_MODULES = {"__init__"}


def _part(path: Path, root: Path) -> str:
    relative = path.relative_to(root)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _level(part: str) -> int:
    for level, parts in enumerate(LAYERS):
        if part in parts:
            return level
    raise KeyError(part)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def violations(root: Path = SRC) -> list[str]:
    """Every import of one part of assay by another that the layer order forbids."""
    out = []
    for path in sorted(root.rglob("*.py")):
        part = _part(path, root)
        if part in ROOT_MODULES:
            continue
        for line, module in _imports(path):
            names = module.split(".")
            if names[0] != "assay" or len(names) < 2:
                continue  # `assay` alone gives only __version__
            target = names[1]
            if target == part:
                continue
            if target in ROOT_MODULES:
                continue
            inside = ".".join(names[1:])
            allowed = ONLY.get(part)
            if _level(target) >= _level(part) or (
                allowed is not None
                and not any(inside == a or inside.startswith(a + ".") for a in allowed)
            ):
                where = path.relative_to(root)
                out.append(f"{where}:{line} imports {module} ({part} may not import {target})")
    return out


def test_every_file_belongs_to_a_layer() -> None:
    unplaced = []
    for path in SRC.rglob("*.py"):
        part = _part(path, SRC)
        try:
            _level(part)
        except KeyError:
            if part not in ROOT_MODULES:
                unplaced.append(str(path.relative_to(SRC)))
    assert unplaced == []


def test_no_import_goes_up_or_sideways() -> None:
    assert violations() == []


def test_mechanism_is_pure() -> None:
    """No I/O, no clock, no randomness: only the standard library's pure parts."""
    impure = {"os", "io", "time", "datetime", "random", "secrets", "pathlib", "importlib"}
    impure |= {"subprocess", "socket", "sqlite3", "shutil", "tempfile"}
    found = [
        f"{path.relative_to(SRC)}:{line} imports {module}"
        for path in sorted((SRC / "mechanism").rglob("*.py"))
        for line, module in _imports(path)
        if module.split(".")[0] in impure
    ]
    assert found == []


@pytest.mark.parametrize(
    ("part", "source", "expected"),
    [
        ("report", "from assay.validator.engine import RoundEngine\n", "validator"),
        ("store", "import assay.attest.sssa\n", "attest"),
        ("records", "from assay.runner.rep import run_rep\n", "runner"),
    ],
)
def test_the_check_sees_an_arrow_up_or_sideways(
    tmp_path: Path, part: str, source: str, expected: str
) -> None:
    (tmp_path / part).mkdir()
    (tmp_path / part / "x.py").write_text(
        "import json\nfrom assay.mechanism.spec import Track\n" + source
    )
    assert violations(tmp_path) == [
        f"{part}/x.py:3 imports {source.split()[1]} ({part} may not import {expected})"
    ]
