"""What the agent was given: each per-task row shows the validator's own detonation of the
task's artifact (its capabilities with their evidence) beside the expected and reported items."""

from __future__ import annotations

from dataclasses import replace

from report_fixtures import HOSTILE_EVIDENCE, build_result

from assay.report.html import render_html
from assay.report.markdown import render_markdown


def test_the_html_task_rows_show_the_detonation_beside_the_findings() -> None:
    result = build_result(agents=2, scale=0.2)
    html = render_html(result)
    tasks = html.split("<h3>Per-task results</h3>", 1)[1].split("<h3>Failures by agent</h3>", 1)[0]
    assert "observed by the validator's detonation" in tasks
    rows = tasks.split("<tr><td")[1:]
    assert rows and all('class="detail observed"' in row for row in rows)
    assert all("credential_read · secrets · seen under baseline" in row for row in rows)
    assert "connects · 203.0.113.7:443 (ci)" in tasks
    assert HOSTILE_EVIDENCE not in html, "an artifact's path is text, never markup"
    assert "reads · /home/&lt;img src=x onerror=alert(4)&gt;/.ssh/id_rsa (baseline)" in tasks


def test_the_markdown_eval_rows_show_the_detonation() -> None:
    result = replace(build_result(agents=1, tracks=("skills",), scale=0.2), kind="eval")
    text = render_markdown(result)
    assert "- observed: ` 2 capabilities observed `" in text
    assert "` credential_read · secrets · seen under baseline `" in text
