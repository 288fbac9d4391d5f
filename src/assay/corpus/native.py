"""The native corpus layout: `<root>/<track>/<task-id>/{artifact/, label.json}`.

`read_task` never raises on bad data: it returns every problem it found, so
`assay corpus validate` can list them all. `NativeCorpus` is the strict loader
rounds use: any problem in a track makes loading that track fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from assay.corpus.interface import (
    CorpusError,
    CorpusSource,
    ExpectedFinding,
    Label,
    PackedArchive,
    PlantedVulnerability,
    Problem,
    Task,
    unsafe_path_reason,
)
from assay.mechanism.spec import Track
from assay.mechanism.taxonomy import normalise
from assay.schema.boundedfs import TreeLimitError, read_capped, read_limited, regular_file
from assay.schema.boundedjson import JsonLimitError, parse_bounded

LABEL_FILE = "label.json"
ARTIFACT_DIR = "artifact"
MAX_LABEL_BYTES = 1 << 20
_LINE_SCAN_BYTES = 64 << 20  # a planted line further into a file than this is refused
# Entries a label may list (expected findings or planted vulnerabilities): as many as
# an agent's report may hold (the mechanism's max_items_per_report), so every one can
# be matched; past it the label is refused before any entry is read.
MAX_LABEL_ENTRIES = 64

_LABEL_KEYS = {
    "track",
    "label",
    "expected_findings",
    "ground_truth",
    "expected_capabilities",
    "source",
    "notes",
    "archive",
}
_FINDING_KEYS = {"category", "severity", "plane", "title", "file", "line"}
_VULN_KEYS = {"file", "line", "cwe", "all_cwes", "title", "description", "severity", "remediation"}
_PLANES = {"action", "context", "protocol"}
_SEVERITIES = {"LOW", "MED", "HIGH", "CRIT"}
_CWE = re.compile(r"CWE-\d+")

T = TypeVar("T")


class _LabelReader:
    """Collects problems while reading one label, so all of them get reported."""

    def __init__(self, path: Path, artifact_dir: Path) -> None:
        self.path = path
        self.artifact_dir = artifact_dir
        self.problems: list[Problem] = []
        # Per artifact file: its line count, or why it has none. Each file is read once
        # however many entries point into it.
        self._lines: dict[str, int | str] = {}

    def fail(self, message: str) -> None:
        self.problems.append(Problem(self.path, message))

    def text(self, obj: dict[str, Any], key: str, where: str, *, required: bool) -> str | None:
        value = obj.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{where}.{key} must be a non-empty string, got {value!r}")
            return None
        return value

    def line(self, obj: dict[str, Any], where: str, *, required: bool) -> int | None:
        value = obj.get("line")
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail(f"{where}.line must be an integer >= 1, got {value!r}")
            return None
        return value

    def artifact_file(self, obj: dict[str, Any], where: str, *, required: bool) -> str | None:
        name = self.text(obj, "file", where, required=required)
        if name is None:
            return None
        reason = unsafe_path_reason(name)
        if reason:
            self.fail(f"{where}.file {name!r}: {reason}")
            return None
        return name

    def items(
        self, value: object, where: str, parse: Callable[[dict[str, Any], str], T | None]
    ) -> tuple[T, ...]:
        if not isinstance(value, list):
            self.fail(f"{where} must be a list, got {type(value).__name__}")
            return ()
        if len(value) > MAX_LABEL_ENTRIES:
            self.fail(f"{where} lists {len(value)} entries; at most {MAX_LABEL_ENTRIES}")
            return ()
        out: list[T] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                self.fail(f"{where}[{i}] must be an object, got {item!r}")
                continue
            parsed = parse(item, f"{where}[{i}]")
            if parsed is not None:
                out.append(parsed)
        return tuple(out)

    def unknown_keys(self, obj: dict[str, Any], allowed: set[str], where: str) -> None:
        for key in sorted(set(obj) - allowed):
            self.fail(f"{where}: unknown key {key!r}")

    def finding(self, obj: dict[str, Any], where: str) -> ExpectedFinding | None:
        self.unknown_keys(obj, _FINDING_KEYS, where)
        count = len(self.problems)
        category = self.text(obj, "category", where, required=True)
        title = self.text(obj, "title", where, required=True)
        plane = obj.get("plane")
        if plane not in _PLANES:
            self.fail(f"{where}.plane must be one of {sorted(_PLANES)}, got {plane!r}")
        severity = obj.get("severity")
        if severity is not None and severity not in _SEVERITIES:
            self.fail(f"{where}.severity must be one of {sorted(_SEVERITIES)}, got {severity!r}")
        file = self.artifact_file(obj, where, required=False)
        line = self.line(obj, where, required=False)
        if len(self.problems) > count or category is None or title is None:
            return None
        return ExpectedFinding(category, title, str(plane), severity, file, line)

    def vulnerability(self, obj: dict[str, Any], where: str) -> PlantedVulnerability | None:
        self.unknown_keys(obj, _VULN_KEYS, where)
        count = len(self.problems)
        file = self.artifact_file(obj, where, required=True)
        line = self.line(obj, where, required=True)
        title = self.text(obj, "title", where, required=True)
        description = self.text(obj, "description", where, required=False) or ""
        cwe = obj.get("cwe")
        if not isinstance(cwe, str) or not _CWE.fullmatch(cwe):
            self.fail(f"{where}.cwe must look like 'CWE-89', got {cwe!r}")
        alternatives = obj.get("all_cwes", [])
        if not isinstance(alternatives, list) or not all(
            isinstance(c, str) and _CWE.fullmatch(c) for c in alternatives
        ):
            self.fail(f"{where}.all_cwes must be a list like ['CWE-89'], got {alternatives!r}")
        if file is not None and line is not None:
            self.check_line_exists(file, line, where)
        if len(self.problems) > count or file is None or line is None or title is None:
            return None
        return PlantedVulnerability(file, line, str(cwe), title, description, tuple(alternatives))

    def check_line_exists(self, file: str, line: int, where: str) -> None:
        if file not in self._lines:
            self._lines[file] = self._count_lines(file)
        lines = self._lines[file]
        if isinstance(lines, str):
            self.fail(f"{where}.file {file!r}{lines}")
        elif line > lines:
            self.fail(f"{where}.line {line} is past the end of {file} ({lines} lines)")

    def _count_lines(self, file: str) -> int | str:
        target = regular_file(self.artifact_dir, file)
        if target is None:
            return " is not a regular file of the artifact"
        try:
            return read_capped(target, _LINE_SCAN_BYTES).count(b"\n") + 1
        except TreeLimitError as exc:
            return f": {exc}"

    def archive(self, value: object) -> PackedArchive | None:
        """The label's `archive`: a regular file of the artifact, with an optional password."""
        if value is None:
            return None
        if not isinstance(value, dict):
            self.fail(f"archive must be an object, got {value!r}")
            return None
        self.unknown_keys(value, {"file", "password"}, "archive")
        count = len(self.problems)
        name = self.artifact_file(value, "archive", required=True)
        password = self.text(value, "password", "archive", required=False)
        if name is not None and regular_file(self.artifact_dir, name) is None:
            self.fail(f"archive.file {name!r} is not a regular file of the artifact")
        if len(self.problems) > count or name is None:
            return None
        return PackedArchive(name, password)

    def capabilities(self, value: object) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(f"expected_capabilities must be a list of strings, got {value!r}")
            return ()
        for name in value:
            canonical = normalise(name)
            if canonical != name:
                hint = f" (use {canonical!r})" if canonical else ""
                self.fail(f"expected_capabilities: {name!r} is not a canonical capability{hint}")
        return tuple(value)


def _read_json(path: Path) -> tuple[object, str | None]:
    """The label, parsed strictly: no NaN, duplicate keys, huge integers or deep nesting."""
    if not path.exists() and not path.is_symlink():
        return None, f"missing {LABEL_FILE}"
    try:
        raw = read_limited(path, MAX_LABEL_BYTES)
        return parse_bounded(raw, max_bytes=MAX_LABEL_BYTES, max_depth=16, strict=True), None
    except (TreeLimitError, JsonLimitError) as exc:
        return None, f"not a valid label: {exc}"


def read_task(task_dir: Path, track: Track) -> tuple[Task | None, list[Problem]]:
    """Parse one task directory; returns the task (None if unusable) and every problem."""
    label_path = task_dir / LABEL_FILE
    artifact_dir = task_dir / ARTIFACT_DIR
    reader = _LabelReader(label_path, artifact_dir)
    if not artifact_dir.is_dir() or artifact_dir.is_symlink():
        reader.problems.append(Problem(artifact_dir, "missing artifact directory"))
    data, error = _read_json(label_path)
    if error:
        reader.fail(error)
        return None, reader.problems
    if not isinstance(data, dict):
        reader.fail(f"label must be a JSON object, got {type(data).__name__}")
        return None, reader.problems
    reader.unknown_keys(data, _LABEL_KEYS, "label")
    if data.get("track") != track.value:
        reader.fail(f"track {data.get('track')!r} does not match directory {track.value!r}")
    raw_label = data.get("label")
    if raw_label not in {label.value for label in Label}:
        reader.fail(f"unknown label {raw_label!r} (expected 'malicious' or 'safe')")
    findings, vulnerabilities = _track_specific(reader, data, track, raw_label)
    capabilities = reader.capabilities(data.get("expected_capabilities", []))
    archive = reader.archive(data.get("archive"))
    source = data.get("source", {})
    if not isinstance(source, dict):
        reader.fail(f"source must be an object, got {source!r}")
    notes = data.get("notes", "")
    if not isinstance(notes, str):
        reader.fail(f"notes must be a string, got {notes!r}")
    if reader.problems:
        return None, reader.problems
    task = Task(
        track=track,
        task_id=task_dir.name,
        label=Label(str(raw_label)),
        artifact_dir=artifact_dir,
        expected_findings=findings,
        vulnerabilities=vulnerabilities,
        expected_capabilities=capabilities,
        source=MappingProxyType(dict(source)),
        notes=notes,
        archive=archive,
    )
    return task, []


def _track_specific(
    reader: _LabelReader, data: dict[str, Any], track: Track, raw_label: object
) -> tuple[tuple[ExpectedFinding, ...], tuple[PlantedVulnerability, ...]]:
    """Behavioural tracks carry expected findings; repositories carry planted ground truth."""
    if track.behavioural:
        if "ground_truth" in data:
            reader.fail("ground_truth belongs to repository labels only")
        findings = reader.items(
            data.get("expected_findings", []), "expected_findings", reader.finding
        )
        return findings, ()
    if data.get("expected_findings"):
        reader.fail("expected_findings belongs to behavioural labels; use ground_truth")
    truth = data.get("ground_truth")
    if not isinstance(truth, dict) or "vulnerabilities" not in truth:
        reader.fail("ground_truth must be an object with a 'vulnerabilities' list")
        return (), ()
    vulns = reader.items(
        truth["vulnerabilities"], "ground_truth.vulnerabilities", reader.vulnerability
    )
    if raw_label == Label.MALICIOUS and not truth["vulnerabilities"]:
        reader.fail("a malicious repository must plant at least one vulnerability")
    if raw_label == Label.SAFE and truth["vulnerabilities"]:
        reader.fail("a safe repository must not list planted vulnerabilities")
    return (), vulns


class NativeCorpus(CorpusSource):
    """Strict loader: a track with any problem raises `CorpusError` listing them all."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def location(self) -> str:
        return str(self.root.resolve())

    def tasks(self, track: Track) -> tuple[Task, ...]:
        track_dir = self.root / track.value
        if not track_dir.is_dir():
            return ()
        tasks: list[Task] = []
        problems: list[Problem] = []
        for task_dir in sorted(p for p in track_dir.iterdir()):
            if not task_dir.is_dir() or task_dir.is_symlink():
                problems.append(Problem(task_dir, "not a task directory"))
                continue
            task, found = read_task(task_dir, track)
            problems.extend(found)
            if task is not None:
                tasks.append(task)
        if problems:
            raise CorpusError("\n".join(str(p) for p in problems))
        return tuple(tasks)
