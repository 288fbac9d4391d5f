"""`--tasks N` caps a round's draw for a quick trial: the first N of each track's seeded
draw, so the same seed gives the same subset."""

from __future__ import annotations

from pathlib import Path

from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import TRACKS
from assay.records.agent import Agent
from assay.schema.mechanism_file import pinned
from assay.validator.planning import make_plan

ROOT = Path(__file__).resolve().parents[2]


def _drawn(tmp: Path, seed: str, cap: int | None) -> dict[str, list[str]]:
    plan = make_plan(
        corpus=NativeCorpus(ROOT / "corpus"),
        agents=[Agent(b"def agent_main(context):\n    return {}\n")],
        tracks=TRACKS,
        round_seed=seed,
        validator_id="local",
        spec=pinned(),
        snapshots=tmp,
        tasks_cap=cap,
    )
    return plan.draw()


def test_a_capped_draw_is_the_head_of_the_full_draw(tmp_path: Path) -> None:
    full = _drawn(tmp_path / "full", "ab12", None)
    capped = _drawn(tmp_path / "capped", "ab12", 2)
    assert set(capped) == set(full)
    for track, tasks in capped.items():
        assert len(tasks) == 2 and tasks == full[track][:2], track
    assert _drawn(tmp_path / "again", "ab12", 2) == capped
    assert _drawn(tmp_path / "other", "cd34", 2) != capped
