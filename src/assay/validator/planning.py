"""Making a round's plan: draw each track's tasks, snapshot their artifacts, pin the agents."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from assay.corpus.interface import CorpusSource, Task, corpus_digest
from assay.corpus.packed import materialised
from assay.corpus.variants.keyed import Keyed
from assay.corpus.variants.transform import remap_lines
from assay.mechanism.draw import draw_tasks
from assay.mechanism.spec import MechanismSpec, Track
from assay.records.agent import Agent
from assay.records.plan import PlannedTask, RoundPlan, SharedDraw
from assay.validator.snapshot import snapshot_artifact
from assay.validator.variants import Variation, round_variant_key, task_variant_key


class PlanError(ValueError):
    """The round cannot be planned as asked (bad corpus, agent, or flag)."""


def _planned(task: Task, snapshots: Path, round_key: Keyed | None) -> PlannedTask:
    """The task as the round will run it: its artifact is the snapshot taken now (the
    round's variant of it when `round_key` is given, with the labels' lines moved)."""
    copy = snapshots / task.track.value / task.task_id
    variation = (
        Variation(task.track, task_variant_key(round_key, task.track, task.task_id))
        if round_key is not None
        else None
    )
    # A packed artifact (a registry's sdist, a dataset's sealed sample) is unpacked by
    # the safe extractors only now, and what the round runs and digests is the tree.
    copy.parent.mkdir(parents=True, exist_ok=True)
    with materialised(task.artifact_dir, task.archive, workdir=copy.parent) as tree:
        digest = snapshot_artifact(tree, copy, prepare=variation)
    planned = PlannedTask(
        track=task.track,
        task_id=task.task_id,
        label=task.label.value,
        artifact_dir=str(copy),
        artifact_digest=digest,
        expected_findings=task.expected_items(),
        planted=task.planted_items(),
    )
    if variation is None:
        return planned
    return msgspec.structs.replace(
        planned,
        original_digest=variation.original_digest,
        expected_findings=remap_lines(planned.expected_findings, variation.varied),
        planted=remap_lines(planned.planted, variation.varied),
    )


def _one_task_per_artifact(track: Track, planned: Sequence[PlannedTask]) -> None:
    """Two drawn tasks of a track with one artifact would score it twice (and their labels
    may disagree): the corpus is refused, as its import refuses such rows."""
    owners: dict[str, str] = {}
    for task in planned:
        owner = owners.setdefault(task.original_digest or task.artifact_digest, task.task_id)
        if owner != task.task_id:
            raise PlanError(
                f"{track.value}: tasks {owner} and {task.task_id} have the same artifact; "
                "one artifact is one task (remove or merge one of them)"
            )


def shared_draw(
    corpus: CorpusSource,
    tracks: Sequence[Track],
    *,
    netuid: int,
    anchor_block: int,
    block_hash: str,
) -> SharedDraw:
    """A chain-mode round's draw over `tracks` of `corpus`, anchored at a subnet's block."""
    digest = corpus_digest(t for track in tracks for t in corpus.tasks(track))
    return SharedDraw(
        netuid=netuid, anchor_block=anchor_block, block_hash=block_hash, corpus_digest=digest
    )


def make_plan(
    *,
    corpus: CorpusSource,
    agents: Sequence[Agent],
    tracks: Sequence[Track],
    round_seed: str | SharedDraw,
    validator_id: str,
    spec: MechanismSpec,
    snapshots: Path,
    reps: int | None = None,
    draw_all: bool = False,
    tasks_cap: int | None = None,
    variant_secret: bytes | None = None,
) -> RoundPlan:
    """Draw each track's tasks (DESIGN §9), snapshot their artifacts under `snapshots`
    (what the round verifies, detonates and mounts) and pin the agents. `round_seed` is
    a local round's seed (the draw is this validator's own) or a chain-mode round's
    `SharedDraw` (the seed is the chain's and the draw every validator's alike).

    `tasks_cap` keeps the first tasks of each track's draw order: a quick trial on a
    seeded subset, the same subset for the same seed. With `variant_secret`, each
    artifact is the round's variant of it (`assay.validator.variants`)."""
    hashes = [a.agent_hash for a in agents]
    if len(set(hashes)) != len(hashes):
        raise PlanError("the same agent code is given twice (agents are identified by hash)")
    if not agents:
        raise PlanError("no agents to run")
    shared = round_seed if isinstance(round_seed, SharedDraw) else None
    seed = shared.round_seed if shared else str(round_seed)
    drawer = None if shared else validator_id
    round_key = round_variant_key(seed, variant_secret) if variant_secret else None
    tasks: list[PlannedTask] = []
    for track in tracks:
        available = corpus.tasks(track)
        count = len(available) if draw_all else spec.track(track).tasks
        if tasks_cap is not None:
            count = min(count, tasks_cap)
        drawn = draw_tasks(
            available, track=track, round_seed=seed, validator_id=drawer, count=count
        )
        planned = [_planned(t, snapshots.resolve(), round_key) for t in drawn]
        _one_task_per_artifact(track, planned)
        tasks.extend(planned)
    return RoundPlan(
        round_seed=seed,
        validator_id=validator_id,
        mechanism_version=spec.version,
        mechanism_digest=spec.digest,
        corpus=corpus.location,
        reps={t: reps or spec.track(t).reps for t in tracks},
        tasks=tuple(tasks),
        agents=tuple(sorted(hashes)),
        shared=shared,
        variants=round_key is not None,
    )
