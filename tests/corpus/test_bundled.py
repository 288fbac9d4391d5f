"""The bundled sample corpus: valid, balanced, and its ground truth points at real sinks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.corpus.interface import Label
from assay.corpus.native import NativeCorpus
from assay.corpus.validate import validate_corpus
from assay.mechanism.spec import TRACKS, Track

BUNDLED = Path(__file__).resolve().parents[2] / "corpus"
SET_ASIDE = BUNDLED.parent / "corpus-eval"

# What the planted line must contain for each weakness.
SINKS = {
    "CWE-89": re.compile(r"execute\(|query\(|Query\("),
    "CWE-78": re.compile(r"os\.system\(|exec\(|subprocess|shell|exec\.Command\("),
    "CWE-22": re.compile(r"send_file\(|readFile\(|open\(|ReadFile\(|extractall\(|\.File\("),
    "CWE-918": re.compile(r"requests\.get\(|axios\.get\(|fetch\(|urlopen\(|http\.Get\("),
    "CWE-502": re.compile(r"pickle\.loads?\(|yaml\.load\("),
    "CWE-79": re.compile(r"innerHTML|mark_safe\(|res\.send\("),
    "CWE-798": re.compile(r"[\"'][A-Za-z0-9_:/@.?=-]{20,}[\"']"),
    "CWE-94": re.compile(r"eval\(|Function\(|Template\("),
    "CWE-306": re.compile(r"subprocess|exec"),
    "CWE-1321": re.compile(r"\[key\]"),
    "CWE-601": re.compile(r"[Rr]edirect\("),
    "CWE-88": re.compile(r"\bgit\b"),
    "CWE-611": re.compile(r"resolve_entities=True"),
}


PARTS = (BUNDLED, SET_ASIDE)


@pytest.mark.parametrize("root", PARTS, ids=lambda p: p.name)
def test_bundled_corpus_validates(root: Path) -> None:
    report = validate_corpus(root)
    assert report.ok, "\n".join(map(str, report.problems))


@pytest.mark.parametrize("track", TRACKS)
def test_counts_and_balance(track: Track) -> None:
    tasks = NativeCorpus(BUNDLED).tasks(track)
    malicious = sum(t.label is Label.MALICIOUS for t in tasks)
    assert len(tasks) >= 30
    assert 0.4 <= malicious / len(tasks) <= 0.6
    held = NativeCorpus(SET_ASIDE).tasks(track)
    assert len(held) >= 6 and 0.4 <= sum(t.malicious for t in held) / len(held) <= 0.6


def test_every_task_records_its_provenance_and_ids_are_neutral() -> None:
    ids: set[str] = set()
    for root in PARTS:
        for track in TRACKS:
            for task in NativeCorpus(root).tasks(track):
                assert str(task.source.get("follows", "")).strip(), task.task_id
                assert re.fullmatch(r"[a-z]+-\d{4}", task.task_id), task.task_id
                assert task.task_id not in ids, f"{task.task_id} is in both parts"
                ids.add(task.task_id)


def test_planted_lines_hold_their_sinks() -> None:
    cwes = set()
    tasks = [t for root in PARTS for t in NativeCorpus(root).tasks(Track.REPOSITORIES)]
    for task in tasks:
        for vuln in task.vulnerabilities:
            lines = (task.artifact_dir / vuln.file).read_text().splitlines()
            line = lines[vuln.line - 1]
            assert SINKS[vuln.cwe].search(line), f"{task.task_id} {vuln.file}:{vuln.line} {line}"
            cwes.add(vuln.cwe)
    assert cwes == set(SINKS)


def test_behavioural_finding_lines_exist() -> None:
    for track in (Track.SKILLS, Track.MCP_SERVERS, Track.PACKAGES):
        for task in (t for root in PARTS for t in NativeCorpus(root).tasks(track)):
            assert task.malicious == bool(task.expected_findings), task.task_id
            for finding in task.expected_findings:
                assert finding.file and finding.line, task.task_id
                lines = (task.artifact_dir / finding.file).read_text().splitlines()
                assert finding.line <= len(lines)


def test_safe_network_targets_only() -> None:
    """Malicious samples may only reach documentation addresses or .invalid names (0.0.0.0 is
    a bind address, which reaches nothing)."""
    address = re.compile(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b")
    for path in (p for root in PARTS for p in root.rglob("*")):
        if path.is_file() and path.name != "label.json":
            for ip in address.findall(path.read_text(errors="ignore")):
                assert ip.startswith(("203.0.113.", "127.0.0.1", "0.0.0.0")), f"{path}: {ip}"
