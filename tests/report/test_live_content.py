"""Reports carry no live attacker content: in Markdown (a pull-request comment) every
string an agent chose is a code span, so no link, @mention or HTML of theirs renders; in
SARIF no location leaves `<track>/<task>/`."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import msgspec
from markdown_it import MarkdownIt
from report_fixtures import build_result

from assay.mechanism.matching import FindingItem
from assay.report.markdown import render_markdown
from assay.report.sarif import render_sarif

MENTION = "@octocat"
URL = "https://evil.example/pwn"
LIVE_NAME = f"{MENTION} see {URL} <img src=x onerror=alert(5)> [click](javascript:alert(6))"
ESCAPE = "../../../../.github/workflows/release.yml"


def _outside_code(html: str) -> str:
    """The rendered comment with every code span and block removed."""
    return re.sub(r"<code>.*?</code>", "", html, flags=re.S)


def test_markdown_renders_agent_strings_as_code_only() -> None:
    result = build_result(agents=3, scale=0.2)
    named = {a: LIVE_NAME if i == 0 else n for i, (a, n) in enumerate(result.agents.items())}
    text = render_markdown(replace(result, agents=named))
    # GitHub's renderer: CommonMark, tables, and bare URLs linked (linkify) outside code.
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "<a " not in html and "<img" not in html and "<script" not in html
    bare = _outside_code(html)
    assert MENTION not in bare and "evil.example" not in bare, "a mention or URL outside code"
    assert "alert(" not in bare and "<b>" not in bare
    assert f"{MENTION} see {URL}" in html  # shown, literally, inside a code span
    # Tables keep their cells: an agent's pipe is escaped inside its code span.
    piped = render_markdown(replace(result, agents={a: "a | b | c" for a in result.agents}))
    tables = MarkdownIt("commonmark").enable("table").render(piped).split("<table>")[1:]
    assert tables
    for table in tables:
        width = len(re.findall(r"<th[ >]", table.split("</thead>")[0]))
        rows = table.split("<tbody>")[1].split("<tr>")[1:]
        assert all(row.count("<td") == width for row in rows)
        assert "<code>a | b | c</code>" in table


def test_sarif_keeps_every_location_inside_its_task() -> None:
    result = build_result(agents=2, scale=0.2, tracks=("skills",))
    key = next(iter(result.speaking))
    record = result.speaking[key]
    planted = (
        FindingItem(category="x", title="climbs out", file=ESCAPE, line=3),
        FindingItem(category="x", title="climbs in and out", file="a/../../b/../../etc", line=1),
        FindingItem(category="x", title="stays", file="./scripts/../scripts/run.py", line=7),
        FindingItem(category="x", title="absolute", file="/etc/passwd", line=1),
    )
    speaking = {**result.speaking, key: msgspec.structs.replace(record, findings=planted)}
    document = render_sarif(replace(result, speaking=speaking))
    uris = {}
    for run in document["runs"]:
        for r in run["results"]:
            (location,) = r["locations"]
            uri = location["physicalLocation"]["artifactLocation"]["uri"]
            assert ".." not in uri.split("/") and not uri.startswith("/"), uri
            assert uri.split("/")[0] == "skills" and len(uri.split("/")) >= 2, uri
            uris[r["message"]["text"]] = (uri, location)
    root = f"skills/{record.task}"
    uri, location = uris["climbs out"]
    assert uri == root and "region" not in location["physicalLocation"]
    assert ESCAPE in location["message"]["text"]
    assert uris["climbs in and out"][0] == root
    assert uris["stays"][0] == f"{root}/scripts/run.py"
    assert uris["absolute"][0] == f"{root}/etc/passwd"
    assert ESCAPE not in json.dumps([u for u, _ in uris.values()])
