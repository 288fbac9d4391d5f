"""The layout the README draws, checked: which part may import which.

Read from the source with `ast` (nothing is imported), so a backwards arrow fails
here with its file and line rather than surfacing later as an import cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"

# Parts that are inputs or outputs of the flow: they read data, never the orchestrator
# or a front end.
NOT_THE_ORCHESTRATOR = (
    "mechanism",
    "corpus",
    "sandbox",
    "runner",
    "inference",
    "schema",
    "detonate",
    "store",
    "records",
    "attest",
    "report",
)
# What a command module may import: the CLI's own modules, the validator's entry points,
# and the report formats that print results.
COMMAND_MAY_IMPORT = ("assay.cli", "assay.validator.api", "assay.report")


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _violations(part: str, allowed: tuple[str, ...], root: Path = SRC) -> list[str]:
    out = []
    for path in sorted((root / part).rglob("*.py")):
        for line, module in _imports(path):
            inside = module.startswith("assay.")  # `assay` alone gives only __version__
            if inside and not any(module == a or module.startswith(a + ".") for a in allowed):
                out.append(f"{path.relative_to(root)}:{line} imports {module}")
    return out


@pytest.mark.parametrize("part", NOT_THE_ORCHESTRATOR)
def test_no_part_but_the_validator_and_cli_imports_them(part: str) -> None:
    others = (*(f"assay.{p}" for p in NOT_THE_ORCHESTRATOR), "assay.bundle")
    assert _violations(part, others) == []


def test_mechanism_is_pure() -> None:
    assert _violations("mechanism", ("assay.mechanism",)) == []


def test_the_sandbox_knows_nothing_of_agents_or_scoring() -> None:
    assert _violations("sandbox", ("assay.sandbox",)) == []


def test_each_command_calls_the_entry_points_and_prints() -> None:
    commands = sorted((SRC / "cli").glob("*_cmd.py"))
    assert commands, "no command modules found"
    bad = []
    for path in commands:
        for line, module in _imports(path):
            inside = module.startswith("assay.")
            if inside and not any(module.startswith(a) for a in COMMAND_MAY_IMPORT):
                bad.append(f"cli/{path.name}:{line} imports {module}")
    assert bad == []


def test_the_check_sees_a_backwards_arrow(tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "html.py").write_text(
        "import json\nfrom assay.records.round import RoundResult\n"
        "from assay.validator.round import RoundEngine\n"
    )
    assert _violations("report", ("assay.results",), tmp_path) == [
        "report/html.py:3 imports assay.validator.round"
    ]
