"""The worked examples in `assay.mechanism`'s docstrings (DESIGN §6) run as tests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import assay.mechanism

MODULES = sorted(m.name for m in pkgutil.iter_modules(assay.mechanism.__path__, "assay.mechanism."))


def test_the_worked_examples_are_there() -> None:
    found = {
        name: len(doctest.DocTestFinder().find(importlib.import_module(name)))
        for name in (
            "assay.mechanism.metrics",
            "assay.mechanism.matching",
            "assay.mechanism.weights",
        )
    }
    assert all(found.values()), found


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
