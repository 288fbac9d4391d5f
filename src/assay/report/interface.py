"""The report-format interface: a round result in, one document out."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from assay.results.round import RoundResult


class ReportFormat(ABC):
    """One way of presenting a `RoundResult` (JSON for machines, HTML for people)."""

    name: ClassVar[str]
    suffix: ClassVar[str]

    @abstractmethod
    def render(self, result: RoundResult) -> str:
        """The whole document as text; equal results give identical text."""

    def write(self, result: RoundResult, path: Path) -> None:
        """Write the document, replacing `path` only once it is complete."""
        text = self.render(result)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A reader (or a browser left open on the old report) never sees half a file.
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
