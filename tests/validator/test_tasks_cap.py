"""`--tasks N` caps a round's draw for a quick trial: the first N of each track's seeded
draw, so the same seed gives the same subset."""

from __future__ import annotations

from pathlib import Path

from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import TRACKS
from assay.records.agent import Agent
from assay.schema.mechanism_file import pinned
from assay.validator.planning import make_plan, one_label_tracks

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


LABELS = {
    (task.track.value, task.task_id): task.label.value
    for track in TRACKS
    for task in NativeCorpus(ROOT / "corpus").tasks(track)
}


def _labels(track: str, tasks: list[str]) -> set[str]:
    return {LABELS[(track, t)] for t in tasks}


def test_a_capped_draw_is_the_head_of_the_full_draw_with_both_labels(tmp_path: Path) -> None:
    full = _drawn(tmp_path / "full", "ab12", None)
    capped = _drawn(tmp_path / "capped", "ab12", 2)
    assert set(capped) == set(full)
    for track, tasks in capped.items():
        assert len(tasks) == 2 and tasks[0] == full[track][0], track
        if track == "repositories" or len(_labels(track, full[track][:2])) == 2:
            assert tasks == full[track][:2], track
        else:  # the head has one label: its second task gives way to the other label
            assert _labels(track, tasks) == {"safe", "malicious"}, track
    assert _drawn(tmp_path / "again", "ab12", 2) == capped
    assert _drawn(tmp_path / "other", "cd34", 2) != capped


def test_a_trial_of_two_skills_tasks_takes_both_labels_whatever_the_seed(
    tmp_path: Path,
) -> None:
    """Seeds whose draw starts with two tasks of one label still give a trial with an MCC."""
    one_label_heads = 0
    for seed in ("s1", "s2", "s3", "s4", "s5", "s6"):
        full = _drawn(tmp_path / f"full-{seed}", seed, None)["skills"]
        one_label_heads += len(_labels("skills", full[:2])) == 1
        trial = _drawn(tmp_path / seed, seed, 2)["skills"]
        assert _labels("skills", trial) == {"safe", "malicious"}, seed
    assert one_label_heads, "no seed's draw starts with one label: the test proves nothing"


def test_a_one_label_draw_is_named_as_having_no_mcc(tmp_path: Path) -> None:
    plan = make_plan(
        corpus=NativeCorpus(ROOT / "corpus"),
        agents=[Agent(b"def agent_main(context):\n    return {}\n")],
        tracks=TRACKS,
        round_seed="ab12",
        validator_id="local",
        spec=pinned(),
        snapshots=tmp_path,
        tasks_cap=1,
    )
    named = one_label_tracks(plan)
    assert set(named) == {t for t in TRACKS if t.behavioural}
    assert all(label in ("safe", "malicious") for label in named.values())
