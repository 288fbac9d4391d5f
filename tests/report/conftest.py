"""Fixtures for the report tests (the builders live in report_fixtures)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from report_fixtures import build_result

from assay.records.round import RoundResult


@pytest.fixture(scope="session")
def round_result() -> RoundResult:
    return build_result()


@pytest.fixture(scope="session")
def render() -> Callable[[RoundResult], str]:
    from assay.report.html import render_html

    return render_html
