"""The JSON report: `RoundResult.to_json()` in canonical form (sorted keys, no NaN)."""

from __future__ import annotations

import json
from typing import ClassVar

from assay.records.round import RoundResult
from assay.report.interface import ReportFormat


class JsonFormat(ReportFormat):
    name: ClassVar[str] = "json"
    suffix: ClassVar[str] = ".json"

    def render(self, result: RoundResult) -> str:
        # Sorted keys and a fixed layout so two equal rounds print identical bytes;
        # a NaN would make the output unparseable by strict readers, so it is refused.
        return json.dumps(result.to_json(), sort_keys=True, indent=2, allow_nan=False) + "\n"
