"""The mechanism file at the edge: the pinned `mechanism.toml` shipped in the package,
or another one a test or benchmark names. `assay.mechanism` only parses the bytes.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from assay.mechanism.spec import MechanismSpec, SpecError, parse_spec


def pinned_bytes() -> bytes:
    return resources.files("assay.mechanism").joinpath("mechanism.toml").read_bytes()


@cache
def pinned() -> MechanismSpec:
    """The spec shipped with the package (the one rounds must use), read once."""
    return parse_spec(pinned_bytes())


def load_spec(path: Path) -> MechanismSpec:
    """A spec from a file (tests use short budgets; rounds use `pinned()`)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"mechanism spec: cannot read {path}: {exc}") from exc
    return parse_spec(raw)
