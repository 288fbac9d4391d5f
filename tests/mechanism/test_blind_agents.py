"""Agents that know nothing of the artifact stay below the threshold on the bundled
repositories, whatever they put in their reports (issue 22: `all_cwes` was a wildcard)."""

from __future__ import annotations

from pathlib import Path

from assay.corpus.native import NativeCorpus
from assay.mechanism.matching import VulnerabilityItem
from assay.mechanism.scoring import RepResult, TaskTruth, score_track
from assay.mechanism.spec import Track
from assay.mechanism.weights import eligible
from assay.schema.mechanism_file import pinned

SPEC = pinned()
ROOT = Path(__file__).resolve().parents[2]
EVERY_CWE = tuple(f"CWE-{n}" for n in range(1, 1401))


def _grid(artifact: Path, all_cwes: tuple[str, ...]) -> tuple[VulnerabilityItem, ...]:
    """A vulnerability every 2δ+1 lines of every source file, as many as a report holds."""
    step = 2 * SPEC.line_window + 1
    found = [
        VulnerabilityItem(
            file=path.relative_to(artifact).as_posix(),
            line=line,
            cwe="CWE-20",
            all_cwes=all_cwes,
            title="vulnerability",
        )
        for path in sorted(p for p in artifact.rglob("*") if p.is_file())
        for line in range(SPEC.line_window + 1, len(path.read_bytes().splitlines()) + 1, step)
    ]
    return tuple(found[: SPEC.max_items_per_report])


def _score(all_cwes: tuple[str, ...]) -> tuple[float, float]:
    tasks = NativeCorpus(ROOT / "corpus").tasks(Track.REPOSITORIES)
    scored = [
        (
            TaskTruth(t.task_id, t.label.value, planted=t.planted_items()),
            [RepResult(True, vulnerabilities=_grid(t.artifact_dir, all_cwes))],
        )
        for t in tasks
    ]
    result = score_track(Track.REPOSITORIES, scored, SPEC)
    return result.score, result.floor


def test_a_line_grid_naming_every_cwe_is_not_paid() -> None:
    threshold = SPEC.track(Track.REPOSITORIES).threshold
    for all_cwes in (EVERY_CWE, ()):
        score, floor = _score(all_cwes)
        assert score < threshold and not eligible(score, threshold, floor), (len(all_cwes), score)
