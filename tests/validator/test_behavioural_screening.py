"""Behavioural screening: reports identical on every task make the later arrival a copy."""

from __future__ import annotations

import pytest

from assay.mechanism.matching import FindingItem
from assay.mechanism.spec import Track
from assay.records.plan import PlannedTask, RoundPlan
from assay.records.rep import RepRecord
from assay.schema.mechanism_file import pinned
from assay.validator.scoring import scorecard
from assay.validator.screening import behavioural_copies

TASKS = {"evil": "malicious", "fine": "safe"}
SPEC = pinned()


def reps(
    agent: str, verdicts: dict[str, str], finding: str | None = "exfiltration"
) -> list[RepRecord]:
    out = []
    for task, label in TASKS.items():
        named = finding is not None and label == "malicious"
        found = (FindingItem(category=finding or "", title="sends keys out"),) if named else ()
        for rep in range(SPEC.track(Track.SKILLS).reps):
            out.append(
                RepRecord(
                    agent=agent, track=Track.SKILLS, task=task, label=label, rep=rep,  # type: ignore[arg-type]
                    status="completed", verdict=verdicts[task], findings=found,  # type: ignore[arg-type]
                )
            )  # fmt: skip
    return out


def plan(order: tuple[str, ...]) -> RoundPlan:
    tasks = tuple(PlannedTask(Track.SKILLS, t, label, "", "", (), ()) for t, label in TASKS.items())
    return RoundPlan(
        round_seed="5eed", validator_id="local", mechanism_version=SPEC.version,
        mechanism_digest=SPEC.digest, corpus="c", reps={Track.SKILLS: 3}, tasks=tasks,
        agents=tuple(sorted(order)), arrival_order=order,
    )  # fmt: skip


RIGHT = {"evil": "BLOCK", "fine": "ALLOW"}


@pytest.mark.parametrize("order", [("author", "copier", "other"), ("copier", "author", "other")])
def test_only_the_earlier_of_identical_reports_is_paid_whatever_the_names(
    order: tuple[str, ...],
) -> None:
    records = reps("author", RIGHT) + reps("copier", RIGHT) + reps("other", RIGHT, "persistence")
    copies = behavioural_copies(records, plan(order))
    later = order[1]
    assert set(copies) == {"skills"} and set(copies["skills"]) == {later}
    assert f"those of {order[0]}" in copies["skills"][later]
    card = scorecard(records, salt="5eed", spec=SPEC, copies=copies)
    assert card.scores["skills"][later].score == 0.0 and later not in card.weights
    assert card.weights[order[0]] > 0 and card.copies == copies


def test_bare_verdicts_that_coincide_are_no_copy() -> None:
    records = reps("author", RIGHT, None) + reps("other", RIGHT, None)
    assert behavioural_copies(records, plan(("author", "other"))) == {}


def test_a_plan_without_arrivals_screens_nothing() -> None:
    records = reps("author", RIGHT) + reps("copier", RIGHT)
    assert behavioural_copies(records, plan(())) == {}
