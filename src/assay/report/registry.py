"""Every report format by name: what `--format` chooses from."""

from __future__ import annotations

from assay.report.html import HtmlFormat
from assay.report.interface import ReportFormat
from assay.report.json import JsonFormat
from assay.report.junit import JunitFormat
from assay.report.markdown import MarkdownFormat
from assay.report.sarif import SarifFormat

FORMATS: dict[str, type[ReportFormat]] = {
    f.name: f for f in (JsonFormat, HtmlFormat, MarkdownFormat, SarifFormat, JunitFormat)
}


def report_format(name: str) -> ReportFormat:
    return FORMATS[name]()
