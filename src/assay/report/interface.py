"""The report-format interface: a round result in, one document out."""

from __future__ import annotations

import contextlib
import os
import stat
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from assay.records.round import RoundResult


class ReportFormat(ABC):
    """One way of presenting a `RoundResult` (JSON for machines, HTML for people)."""

    name: ClassVar[str]
    suffix: ClassVar[str]

    @abstractmethod
    def render(self, result: RoundResult) -> str:
        """The whole document as text; equal results give identical text."""

    def write(self, result: RoundResult, path: Path) -> None:
        """Write the document to `path` (see `write_document`)."""
        write_document(path, self.render(result))


def write_document(path: Path, text: str) -> None:
    """Write `text` to `path`, a regular file replaced only once the text is complete,
    so a reader (or a browser left open on the old report) never sees half a file.

    Anything else already there (`/dev/null`, a FIFO, a symlink) is written through
    as it is: replacing it would put a regular file in place of a device or a link.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(path.lstat().st_mode):
            with path.open("w", encoding="utf-8") as handle:
                handle.write(text)
            return
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
