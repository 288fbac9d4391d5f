"""Making a round's plan: draw each track's tasks, snapshot their artifacts, pin the agents."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from assay.corpus.interface import CorpusSource, Task
from assay.corpus.packed import materialised
from assay.mechanism.draw import draw_tasks
from assay.mechanism.spec import MechanismSpec, Track
from assay.records.agent import Agent
from assay.records.plan import PlannedTask, RoundPlan
from assay.validator.snapshot import snapshot_artifact


class PlanError(ValueError):
    """The round cannot be planned as asked (bad corpus, agent, or flag)."""


def _planned(task: Task, snapshots: Path) -> PlannedTask:
    """The task as the round will run it: its artifact is the snapshot taken now."""
    copy = snapshots / task.track.value / task.task_id
    # A packed artifact (a registry's sdist, a dataset's sealed sample) is unpacked by
    # the safe extractors only now, and what the round runs and digests is the tree.
    copy.parent.mkdir(parents=True, exist_ok=True)
    with materialised(task.artifact_dir, task.archive, workdir=copy.parent) as tree:
        digest = snapshot_artifact(tree, copy)
    return PlannedTask(
        track=task.track,
        task_id=task.task_id,
        label=task.label.value,
        artifact_dir=str(copy),
        artifact_digest=digest,
        expected_findings=task.expected_items(),
        planted=task.planted_items(),
    )


def _one_task_per_artifact(track: Track, planned: Sequence[PlannedTask]) -> None:
    """Two drawn tasks of a track with one artifact would score it twice (and their labels
    may disagree): the corpus is refused, as its import refuses such rows."""
    owners: dict[str, str] = {}
    for task in planned:
        owner = owners.setdefault(task.artifact_digest, task.task_id)
        if owner != task.task_id:
            raise PlanError(
                f"{track.value}: tasks {owner} and {task.task_id} have the same artifact; "
                "one artifact is one task (remove or merge one of them)"
            )


def trial_draw(drawn: Sequence[Task], order: Sequence[Task], cap: int) -> tuple[Task, ...]:
    """The first `cap` tasks of the draw, with both labels when `cap` allows and the track
    has both: a trial of one label has no MCC (every agent would score 0).

    The last of the first `cap` is swapped for the first task of the missing label, from
    the mechanism's draw (`drawn`) if it has one, else from the track's whole seeded order:
    the same seed gives the same trial."""
    trial = list(drawn[:cap])
    labels = {t.label for t in trial}
    if cap < 2 or len(labels) != 1:
        return tuple(trial)
    pool = drawn if len({t.label for t in drawn}) > 1 else order
    other = next((t for t in pool if t.label not in labels), None)
    if other is not None:
        trial[-1] = other
    return tuple(trial)


def one_label_tracks(plan: RoundPlan) -> dict[Track, str]:
    """Behavioural tracks whose drawn tasks all carry one label, and that label: on such
    a draw MCC is 0 for every agent, whatever it answers."""
    labels: dict[Track, set[str]] = {}
    for task in plan.tasks:
        labels.setdefault(task.track, set()).add(task.label)
    return {
        track: next(iter(seen))
        for track, seen in labels.items()
        if track.behavioural and len(seen) == 1
    }


def make_plan(
    *,
    corpus: CorpusSource,
    agents: Sequence[Agent],
    tracks: Sequence[Track],
    round_seed: str,
    validator_id: str,
    spec: MechanismSpec,
    snapshots: Path,
    reps: int | None = None,
    draw_all: bool = False,
    tasks_cap: int | None = None,
) -> RoundPlan:
    """Draw each track's tasks (DESIGN §9), snapshot their artifacts under `snapshots`
    (what the round verifies, detonates and mounts) and pin the agents.

    `tasks_cap` keeps the first tasks of each track's draw order: a quick trial on a
    seeded subset, the same subset for the same seed."""
    hashes = [a.agent_hash for a in agents]
    if len(set(hashes)) != len(hashes):
        raise PlanError("the same agent code is given twice (agents are identified by hash)")
    if not agents:
        raise PlanError("no agents to run")
    tasks: list[PlannedTask] = []
    for track in tracks:
        available = corpus.tasks(track)
        count = len(available) if draw_all else spec.track(track).tasks
        drawn = draw_tasks(
            available, track=track, round_seed=round_seed, validator_id=validator_id, count=count
        )
        if tasks_cap is not None and track.behavioural:
            order = draw_tasks(
                available,
                track=track,
                round_seed=round_seed,
                validator_id=validator_id,
                count=len(available),
            )
            drawn = trial_draw(drawn, order, tasks_cap)
        elif tasks_cap is not None:
            drawn = drawn[:tasks_cap]
        planned = [_planned(t, snapshots.resolve()) for t in drawn]
        _one_task_per_artifact(track, planned)
        tasks.extend(planned)
    return RoundPlan(
        round_seed=round_seed,
        validator_id=validator_id,
        mechanism_version=spec.version,
        mechanism_digest=spec.digest,
        corpus=corpus.location,
        reps={t: reps or spec.track(t).reps for t in tracks},
        tasks=tuple(tasks),
        agents=tuple(sorted(hashes)),
    )
