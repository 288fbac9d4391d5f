"""The JSON report: RoundResult.to_json() in canonical, key-sorted form."""

from __future__ import annotations

import json
from pathlib import Path

from report_fixtures import abstained_result, build_result

from assay.records.round import RoundResult
from assay.report.html import HtmlFormat
from assay.report.interface import ReportFormat
from assay.report.json import JsonFormat


def _keys_sorted(value: object) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(_keys_sorted(v) for v in value.values())
    if isinstance(value, list):
        return all(_keys_sorted(v) for v in value)
    return True


def test_json_is_the_result_with_every_key_sorted(round_result: RoundResult) -> None:
    text = JsonFormat().render(round_result)
    parsed = json.loads(text)
    assert parsed == json.loads(json.dumps(round_result.to_json()))
    assert _keys_sorted(parsed)
    assert text.endswith("}\n")


def test_equal_rounds_give_identical_bytes() -> None:
    assert JsonFormat().render(build_result(seed=11)) == JsonFormat().render(build_result(seed=11))


def test_abstained_round_has_reason_and_no_scores() -> None:
    parsed = json.loads(JsonFormat().render(abstained_result()))
    assert parsed["status"] == "abstained" and "sandbox unsound" in parsed["reason"]
    assert parsed["scores"] == {} and parsed["weights"] == {}


def test_formats_share_the_interface(tmp_path: Path, round_result: RoundResult) -> None:
    formats: list[ReportFormat] = [JsonFormat(), HtmlFormat()]
    assert [f.name for f in formats] == ["json", "html"]
    for fmt in formats:
        target = tmp_path / f"round{fmt.suffix}"
        fmt.write(round_result, target)
        assert target.read_text(encoding="utf-8") == fmt.render(round_result)
