"""The all-cores scorer gives the very same scorecard, and the same first error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from assay.records.rep import RecordError, read_records
from assay.validator.parallel import score_file
from assay.validator.scoring import scorecard

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from synthetic_records import write  # noqa: E402

from assay.schema.mechanism_file import pinned  # noqa: E402

SPEC = pinned()

# The all-cores scorer starts a process per core: one worker runs the module, so its
# records file is written once and no two all-cores scorers compete.
pytestmark = pytest.mark.xdist_group("all_cores")


@pytest.fixture(scope="module")
def records_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("records") / "r.jsonl"
    write(str(path), agents=9, seed=3, scale=0.4)
    return path


def test_parallel_equals_sequential(records_file: Path) -> None:
    sequential = scorecard(read_records(records_file), salt="s", spec=SPEC)
    for jobs in (2, 3):
        assert score_file(records_file, salt="s", jobs=jobs, min_bytes=0, spec=SPEC) == sequential


def test_first_bad_line_is_reported_whichever_worker_reads_it(
    records_file: Path, tmp_path: Path
) -> None:
    lines = records_file.read_text().splitlines(keepends=True)
    bad = json.loads(lines[40])
    bad["verdict"] = "MAYBE"
    lines[40] = json.dumps(bad) + "\n"
    lines[90] = "{not json\n"
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(lines))
    with pytest.raises(RecordError, match=r"^line 41: ") as caught:
        score_file(path, salt="s", jobs=3, min_bytes=0, spec=SPEC)
    assert caught.value.line == 41


def test_incomplete_agents_are_refused_across_workers(records_file: Path, tmp_path: Path) -> None:
    lines = records_file.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    kept = [ln for ln in lines if not (first["agent"] in ln and first["task"] in ln)]
    path = tmp_path / "partial.jsonl"
    path.write_text("".join(kept))
    with pytest.raises(RecordError, match="scores would be partial"):
        score_file(path, salt="s", jobs=2, min_bytes=0, spec=SPEC)
