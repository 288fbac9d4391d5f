"""`assay schema --track T` accepts exactly what the validator accepts.

Every report the validator accepts in these tests (written by hand, returned by
the bundled agents, the example agents and the golden round's frozen agents,
and a few hundred drawn variations of the spellings the models forgive) is valid
against the exported schema under `jsonschema`; the rejected ones are rejected
by both.
"""

from __future__ import annotations

import copy
import socket
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import TRACKS, Track
from assay.mechanism.taxonomy import ALIASES, CAPABILITIES, FINDING_CATEGORIES
from assay.runner.bundle import bundle_package
from assay.runner.context import local_context
from assay.schema.exported import report_json_schema
from assay.schema.mechanism_file import pinned
from assay.schema.report import ReportError, validate_report

ROOT = Path(__file__).resolve().parents[2]
SPEC = pinned()
VALIDATORS = {t: jsonschema.Draft202012Validator(report_json_schema(t)) for t in TRACKS}


def accepted_by_validator(report: object, track: Track) -> bool:
    try:
        validate_report(report, track, max_items=SPEC.max_items_per_report)
    except ReportError:
        return False
    return True


def accepted_by_schema(report: object, track: Track) -> bool:
    return VALIDATORS[track].is_valid(report)


def test_every_schema_is_a_valid_draft_2020_12_schema() -> None:
    for track in TRACKS:
        jsonschema.Draft202012Validator.check_schema(report_json_schema(track))
        assert report_json_schema(track)["description"]


def test_capability_names_and_finding_categories_are_listed() -> None:
    defs = report_json_schema(Track.PACKAGES)["$defs"]
    assert defs["CapabilityName"]["enum"] == sorted(CAPABILITIES)
    assert defs["FindingCategory"]["enum"] == list(FINDING_CATEGORIES)
    docs = (ROOT / "docs" / "agents.md").read_text()
    assert all(f"`{name}`" in docs for name in (*CAPABILITIES, *FINDING_CATEGORIES))


def test_the_corpus_uses_only_the_listed_categories() -> None:
    for track in TRACKS:
        for task in NativeCorpus(ROOT / "corpus").tasks(track):
            for finding in task.expected_findings:
                assert finding.category in FINDING_CATEGORIES, (task.task_id, finding)


# -- reports the validator accepts -------------------------------------------------------

PLANES = {
    "action_plane": {"capabilities": [{"capability": "EXEC_SHELL", "evidence_ref": "a.sh:1"}]},
    "context_plane": {"injected_instructions": [{"file": "SKILL.md", "line": 3}]},
}
EVIDENCE: dict[Track, dict[str, Any]] = {
    Track.SKILLS: PLANES,
    Track.MCP_SERVERS: {**PLANES, "mcp_surface": {"tools": ["x"]}},
    Track.PACKAGES: {**PLANES, "lifecycle": {"install": []}, "supply_chain": {}},
    Track.REPOSITORIES: {
        "audit": {"files_analysed": 3, "lines_analysed": 120},
        "vulnerabilities": [{"file": "a.py", "line": 4, "cwe": 89, "title": "SQL injection"}],
    },
}
FINDING = {"category": "exfil", "severity": "HIGH", "plane": "action", "title": "sends keys"}


def written(track: Track) -> dict[str, Any]:
    verdict = {"decision": "BLOCK", "risk_score": 80, "confidence": 0.9, "summary": "bad"}
    return {"verdict": verdict, "evidence": EVIDENCE[track], "findings": [FINDING]}


# The report of issue 24, accepted by the validator and refused by the old schema.
PHYLAX_PACKAGES = {
    "verdict": "WARN",
    "evidence": {
        "action_plane": {"capabilities": ["EXEC_SHELL", "read-secrets"]},
        "context_plane": {"injected_instructions": []},
        "lifecycle": {"install_time": {}},
        "supply_chain": {"dependencies": []},
    },
    "findings": [{"category": "install_hook", "severity": "MEDIUM", "title": "runs code"}],
}


def _agent(path: Path, name: str) -> ModuleType:
    module = ModuleType(name)
    if path.is_dir():
        code = bundle_package(path, max_bytes=SPEC.sandbox.agent_code_bytes).code
    else:
        code = path.read_text()
    exec(compile(code, str(path), "exec"), module.__dict__)
    return module


def _outputs(agents: list[Path], corpus: Path, tmp: Path) -> Iterator[tuple[str, Track, Any]]:
    tasks = [t for track in TRACKS for t in NativeCorpus(corpus).tasks(track)[:2]]
    for path in agents:
        agent = _agent(path, path.stem)
        for task in tasks:
            workspace = tmp / f"{path.stem}-{task.task_id}"
            workspace.mkdir(parents=True)
            context = local_context(task.track, task.artifact_dir, workspace)
            yield f"{path.stem} on {task.task_id}", task.track, agent.agent_main(context)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> list[Any]:
        raise OSError("no network in tests")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.slow
@pytest.mark.usefixtures("no_network")
def test_every_accepted_fixture_report_is_valid_against_the_schema(tmp_path: Path) -> None:
    bundled = [*sorted((ROOT / "agents").glob("*.py")), ROOT / "agents" / "reference"]
    bundled += [ROOT / "examples" / "minimal_agent.py"]
    with tarfile.open(ROOT / "tests" / "golden" / "inputs.tar.gz") as inputs:
        inputs.extractall(tmp_path / "golden", filter="data")
    golden = sorted((tmp_path / "golden" / "agents").glob("*.py"))
    reports = [(f"written {t}", t, written(t)) for t in TRACKS]
    reports.append(("the phylax-style packages report", Track.PACKAGES, PHYLAX_PACKAGES))
    reports += _outputs(bundled, ROOT / "corpus", tmp_path / "bundled")
    reports += _outputs(golden, tmp_path / "golden" / "corpus", tmp_path / "frozen")
    assert len(reports) > 60
    for name, track, report in reports:
        assert accepted_by_validator(report, track), name
        errors = [e.message for e in VALIDATORS[track].iter_errors(report)]
        assert not errors, (name, errors[:3])


@pytest.mark.parametrize(
    ("track", "change"),
    [
        (Track.PACKAGES, lambda r: r["evidence"].pop("supply_chain")),
        (Track.SKILLS, lambda r: r["verdict"].update(decision="MAYBE")),
        (Track.SKILLS, lambda r: r["verdict"].update(risk_score=101)),
        (Track.SKILLS, lambda r: r["findings"][0].update(severity="SEVERE")),
        (Track.SKILLS, lambda r: r["findings"][0].pop("title")),
        (Track.SKILLS, lambda r: r["findings"][0].update(line="12")),
        (Track.SKILLS, lambda r: r["findings"][0].update(line=-1)),
        (Track.REPOSITORIES, lambda r: r["evidence"]["audit"].update(files_analysed=0)),
        (Track.REPOSITORIES, lambda r: r["evidence"]["vulnerabilities"][0].update(cwe=True)),
        (Track.SKILLS, lambda r: r["evidence"]["action_plane"].update(capabilities="EXEC_SHELL")),
        (
            Track.SKILLS,
            lambda r: r["evidence"]["action_plane"].update(
                capabilities=[{"capability": "exec shell", "evidence_ref": 3}]
            ),
        ),
    ],
)
def test_rejected_reports_are_rejected_by_both(track: Track, change: Any) -> None:
    report = copy.deepcopy(written(track))
    change(report)
    assert not accepted_by_validator(report, track)
    assert not accepted_by_schema(report, track)


# -- the forgiven spellings, drawn ---------------------------------------------------------

ODD = ["", " ", "ı", "ſ", "ß", "ﬅ", "İ", "\u00a0", "\t"]
SPELLED = ["LOW", "MED", "MEDIUM", "HIGH", "CRIT", "CRITICAL", "ALLOW", "WARN", "BLOCK"]
SPELLED += ["SEVERE", "TELEPORT", "ACCESS_WALLET", "LIST_DIRECTORY"]
words = st.sampled_from([*SPELLED, *sorted(CAPABILITIES)[:12], *sorted(ALIASES)[:4]])


@st.composite
def spelled(draw: st.DrawFn) -> str:
    """A word in a random case, some letters swapped for ones that upper to them, spaced."""
    word = draw(words)
    out = []
    for char in word:
        out.append(char.lower() if draw(st.booleans()) else char)
    text = "".join(out)
    for odd, plain in (("ı", "i"), ("ſ", "s"), ("ß", "ss"), ("ﬅ", "st")):
        if draw(st.booleans()):
            text = text.replace(plain, odd)
    if draw(st.booleans()):
        text = text.replace("_", draw(st.sampled_from(["-", " ", "_", "."])))
    return draw(st.sampled_from(ODD)) + text + draw(st.sampled_from(ODD))


numbers = st.one_of(
    st.integers(-3, 200),
    st.sampled_from([0.0, 4.0, 4.5, 1e-3, 0.5, True, False, "12", None, "", [], {}]),
)
anything = st.one_of(spelled(), numbers, st.just({"capability": "exec-shell"}))


@st.composite
def varied(draw: st.DrawFn) -> tuple[Track, dict[str, Any]]:
    track = draw(st.sampled_from(list(TRACKS)))
    report = copy.deepcopy(written(track))
    verdict = draw(st.one_of(spelled(), st.just(report["verdict"])))
    if isinstance(verdict, dict):
        verdict = {**verdict, "decision": draw(spelled())}
        verdict["risk_score"], verdict["confidence"] = draw(numbers), draw(numbers)
    report["verdict"] = verdict
    finding = {**FINDING, "severity": draw(spelled()), "plane": draw(anything)}
    finding["line"], finding["category"] = draw(numbers), draw(st.sampled_from(["x", 3, None]))
    report["findings"] = draw(st.sampled_from([[finding], None, [], "x"]))
    evidence = report["evidence"]
    if track.behavioural:
        claims = draw(st.lists(st.one_of(anything, _claims()), max_size=3))
        evidence["action_plane"] = {"capabilities": claims}
        evidence["context_plane"] = {"injected_instructions": [{"line": draw(numbers)}]}
    else:
        vuln = {"file": "a.py", "line": draw(numbers), "cwe": draw(anything)}
        vuln["all_cwes"] = draw(st.lists(anything, max_size=2))
        evidence["vulnerabilities"] = draw(st.sampled_from([[vuln], None, []]))
        evidence["audit"] = {"files_analysed": draw(numbers), "lines_analysed": draw(numbers)}
    return track, report


@st.composite
def _claims(draw: st.DrawFn) -> dict[str, Any]:
    return {"capability": draw(anything), "evidence_ref": draw(st.one_of(numbers, st.text()))}


@settings(max_examples=250, deadline=None)
@given(varied())
def test_schema_and_validator_agree_on_drawn_reports(case: tuple[Track, dict[str, Any]]) -> None:
    track, report = case
    assert accepted_by_schema(report, track) == accepted_by_validator(report, track)
