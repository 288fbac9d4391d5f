"""Scores and weights from rep records: the one path every score takes.

`assay score`, rounds and `assay eval` all reduce records through here, so a
round's own result and an offline recomputation cannot disagree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from assay.mechanism import bootstrap
from assay.mechanism.consensus import representative
from assay.mechanism.explain import explain
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.metrics import Confusion
from assay.mechanism.scoring import TaskScore, TaskTruth, TrackScore, score_track
from assay.mechanism.spec import MechanismSpec, Track
from assay.mechanism.weights import eligible as is_eligible
from assay.mechanism.weights import emission_weights, rank
from assay.records.matching import MatchingKey, TaskMatching
from assay.records.rep import RecordError, RepRecord, bulk
from assay.records.scorecard import (
    AgentTrackScore,
    ConfusionView,
    RankStability,
    RepView,
    Scorecard,
    ScoreInterval,
    TaskView,
    Views,
)


def _truth_of(record: RepRecord) -> TaskTruth:
    return TaskTruth(record.task, record.label, record.expected_findings, record.planted)


def _same_truth(truth: TaskTruth, record: RepRecord) -> bool:
    return (
        truth.label == record.label
        and truth.expected_findings == record.expected_findings
        and truth.planted == record.planted
    )


class Grouping:
    """Records grouped by track, agent and task, with the task truth checked for consistency."""

    def __init__(self) -> None:
        self.truth: dict[tuple[Track, str], TaskTruth] = {}
        self.reps: dict[Track, dict[str, dict[str, dict[int, RepRecord]]]] = defaultdict(
            lambda: defaultdict(dict)
        )

    def add(self, record: RepRecord) -> None:
        key = (record.track, record.task)
        truth = self.truth.get(key)
        if truth is None:
            self.truth[key] = _truth_of(record)
        elif not _same_truth(truth, record):
            raise RecordError(
                f"{record.track}/{record.task}: label or ground truth differs between records"
            )
        reps = self.reps[record.track][record.agent].setdefault(record.task, {})
        if record.rep in reps:
            raise RecordError(
                f"{record.track}/{record.task}: rep {record.rep} of agent {record.agent} "
                "appears twice"
            )
        reps[record.rep] = record

    def check_complete(self) -> None:
        check_complete(
            {key for key in self.truth},
            {
                track: {a: tasks.keys() for a, tasks in agents.items()}
                for track, agents in self.reps.items()
            },
        )


def check_complete(
    tasks: Iterable[tuple[Track, str]], seen: Mapping[Track, Mapping[str, Iterable[str]]]
) -> None:
    """Every agent on a track must have records for every task of that track."""
    by_track: dict[Track, set[str]] = defaultdict(set)
    for track, task in tasks:
        by_track[track].add(task)
    for track, agents in seen.items():
        for agent, agent_tasks in agents.items():
            missing = sorted(by_track[track] - set(agent_tasks))
            if missing:
                raise RecordError(
                    f"{track}: agent {agent} has no records for {len(missing)} task(s), "
                    f"e.g. {missing[0]}; scores would be partial"
                )


def _agent_track(
    track: Track,
    tasks: dict[str, dict[int, RepRecord]],
    truth: dict[tuple[Track, str], TaskTruth],
    spec: MechanismSpec,
) -> tuple[TrackScore, list[RepRecord]]:
    records = [r for task in sorted(tasks) for _, r in sorted(tasks[task].items())]
    inputs = [
        (truth[(track, task)], [r for _, r in sorted(reps.items())])
        for task, reps in sorted(tasks.items())
    ]
    return score_track(track, inputs, spec), records


def _view(
    track_score: TrackScore, records: Sequence[RepRecord], spec: MechanismSpec
) -> AgentTrackScore:
    by_task: dict[str, list[RepView]] = defaultdict(list)
    reasons: dict[str, int] = defaultdict(int)
    threshold = spec.track(track_score.track).threshold
    for r in records:
        by_task[r.task].append(
            RepView(rep=r.rep, status=r.status, reason=r.reason, verdict=r.verdict)
        )
        if not r.completed:
            reasons[r.reason or "unknown"] += 1
    m = track_score.confusion
    return AgentTrackScore(
        score=track_score.score,
        eligible=is_eligible(track_score.score, threshold, track_score.floor),
        threshold=threshold,
        cpu_budget_s=spec.track(track_score.track).cpu_budget_s,
        confusion=_confusion(m, track_score.tasks) if m else None,
        mcc=track_score.mcc,
        clamped_mcc=track_score.clamped_mcc,
        findings=track_score.findings,
        f2=track_score.f2,
        floor=track_score.floor,
        tasks=len(track_score.tasks),
        failed_reps=sum(reasons.values()),
        failure_reasons=dict(sorted(reasons.items())),
        task_results=[
            TaskView(
                task=t.task_id,
                label=t.label,
                verdict=t.verdict,
                correct=t.correct,
                findings=t.findings,
                f2=t.f2,
                reps=by_task[t.task_id],
            )
            for t in track_score.tasks
        ],
    )


def _confusion(m: Confusion, tasks: Sequence[TaskScore]) -> ConfusionView:
    silent = sum(t.verdict is None for t in tasks)
    return ConfusionView(tp=m.tp, tn=m.tn, fp=m.fp, fn=m.fn, no_verdict=silent)


def _ranked(
    views: dict[str, AgentTrackScore], salt: str, track: Track, threshold: float
) -> dict[str, AgentTrackScore]:
    scores = {a: v.score for a, v in views.items()}
    order = rank(scores, salt=salt, track=track.value, threshold=threshold, floor=_floor(views))
    places = {agent: i + 1 for i, agent in enumerate(order)}
    return {a: msgspec.structs.replace(views[a], rank=places.get(a)) for a in sorted(views)}


def group(records: Iterable[RepRecord]) -> Grouping:
    grouping = Grouping()
    for record in records:
        grouping.add(record)
    return grouping


def unranked_views(grouping: Grouping, spec: MechanismSpec) -> Views:
    """Each agent's score on each track, before ranking against the others."""
    views: Views = {}
    for track, agents in grouping.reps.items():
        views[track] = {}
        for agent, tasks in agents.items():
            track_score, recs = _agent_track(track, tasks, grouping.truth, spec)
            views[track][agent] = _view(track_score, recs, spec)
    return views


def _floor(views: Mapping[str, AgentTrackScore]) -> float:
    # Every agent of a track is scored on the same draw, so they share one floor.
    return max((v.floor for v in views.values()), default=0.0)


def _ranking_order(scores: Mapping[str, AgentTrackScore]) -> list[str]:
    """The ranking as shown: ranked agents first, then the rest by score."""
    return sorted(scores, key=lambda a: (scores[a].rank or 1 << 30, -scores[a].score, a))


def _bootstrapped(
    track: Track, agents: dict[str, AgentTrackScore], salt: str, spec: MechanismSpec
) -> tuple[dict[str, AgentTrackScore], RankStability | None]:
    """Each agent's score interval over resampled tasks, and how often the top three keep
    their order: the same resamples for every agent of the track."""
    tasks = len(next(iter(agents.values())).task_results) if agents else 0
    if tasks == 0:
        return agents, None
    rows = bootstrap.draws(salt, track, tasks)
    resampled = {
        a: bootstrap.resampled_scores(track, v.task_results, rows, spec) for a, v in agents.items()
    }
    with_intervals = {
        a: msgspec.structs.replace(v, interval=_interval(bootstrap.interval(resampled[a])))
        for a, v in agents.items()
    }
    order = _ranking_order(agents)
    separated = _separated(order, agents)
    held = bootstrap.stability(order, resampled, separated) if separated else None
    if held is None:
        return with_intervals, None
    return with_intervals, RankStability(
        agents=list(held.agents),
        kept=held.kept,
        resamples=bootstrap.RESAMPLES,
        level=bootstrap.LEVEL,
    )


def _separated(order: list[str], agents: Mapping[str, AgentTrackScore]) -> int:
    """How many of the ranking's first agents (up to the top three) to ask about: the paid
    (ranked) ones that the round's own scores set apart from each other and from the agent
    after them. Agents tied on the whole draw have no order for a resample to keep, and an
    unpaid agent has no place to keep: asking about either would report, say, two leaders
    far apart as never keeping their order because the third place is a tie at 0. None
    (0) when no agent is paid or the first ties the second: there is no order to keep."""
    scores = [agents[a].score for a in order]
    paid = sum(agents[a].rank is not None for a in order[: bootstrap.TOP])
    count = 1
    while count < paid and scores[count - 1] > scores[count]:
        count += 1
    while 0 < count < len(scores) and scores[count - 1] <= scores[count]:
        count -= 1
    return count if paid else 0


def _interval(found: bootstrap.Interval | None) -> ScoreInterval | None:
    if found is None:
        return None
    return ScoreInterval(low=found.low, high=found.high, level=bootstrap.LEVEL)


def finish(
    views: Views,
    *,
    salt: str,
    spec: MechanismSpec,
    copies: Mapping[str, Mapping[str, str]] | None = None,
) -> Scorecard:
    """Rank every track, bootstrap its scores and weigh: the step that needs every agent.
    `copies` (track -> agent -> why) score 0 on their track."""
    copies = copies or {}
    scores: dict[str, dict[str, AgentTrackScore]] = {}
    stability: dict[str, RankStability] = {}
    for track in sorted(views):
        zeroed = copies.get(track.value, {})
        own = {
            a: msgspec.structs.replace(v, score=0.0, eligible=False) if a in zeroed else v
            for a, v in views[track].items()
        }
        ranked = _ranked(own, salt, track, spec.track(track).threshold)
        scores[track.value], held = _bootstrapped(track, ranked, salt, spec)
        if held is not None:
            stability[track.value] = held
    weights = emission_weights(
        {t: {a: v.score for a, v in agents.items()} for t, agents in scores.items()},
        salt=salt,
        spec=spec,
        floors={t: _floor(agents) for t, agents in scores.items()},
    )
    return Scorecard(
        mechanism_version=spec.version,
        mechanism_digest=spec.digest,
        scores=scores,
        weights=weights,
        stability=stability,
        copies={t: dict(sorted(c.items())) for t, c in sorted(copies.items()) if c},
    )


def scorecard(
    records: Iterable[RepRecord],
    *,
    salt: str,
    spec: MechanismSpec,
    copies: Mapping[str, Mapping[str, str]] | None = None,
) -> Scorecard:
    """Score every agent on every track present in the records and weigh them."""
    with bulk():
        grouping = group(records)
        grouping.check_complete()
        return finish(unranked_views(grouping, spec), salt=salt, spec=spec, copies=copies)


Speaking = dict[tuple[str, str, str], RepRecord]


def speaking_reps(records: Iterable[RepRecord]) -> dict[tuple[str, str, str], RepRecord]:
    """Per (agent, track, task), the rep whose report stands for the task.

    The lowest-numbered rep agreeing with the consensus (the one an attestation
    signs); where no verdict reached a consensus (repositories need none), the
    lowest-numbered completed rep. Tasks where no rep completed have none.
    """
    groups: dict[tuple[str, str, str], list[RepRecord]] = {}
    for record in records:
        groups.setdefault((record.agent, record.track.value, record.task), []).append(record)
    chosen: dict[tuple[str, str, str], RepRecord] = {}
    for key, reps in groups.items():
        rep = representative([(r.rep, r.verdict if r.completed else None) for r in reps])
        if rep is None:
            rep = min((r.rep for r in reps if r.completed), default=None)
        speaking = next((r for r in reps if r.rep == rep), None)
        if speaking is not None:
            chosen[key] = speaking
    return chosen


def task_matching(
    records: Iterable[RepRecord], speaking: Speaking, spec: MechanismSpec
) -> dict[MatchingKey, TaskMatching]:
    """Per (agent, track, task), the report standing for the task matched against the
    label, pair by pair: the score's own matching with every criterion's reason, for
    every view to show. Tasks where nothing was expected nor reported have none."""
    out: dict[MatchingKey, TaskMatching] = {}
    for record in records:
        key = (record.agent, record.track.value, record.task)
        if key in out:
            continue
        rep = speaking.get(key)
        track = record.track
        expected = record.expected_findings if track.behavioural else record.planted
        reported: Sequence[FindingItem] | Sequence[VulnerabilityItem] = ()
        if rep is not None:
            reported = rep.findings if track.behavioural else rep.vulnerabilities
        if expected or reported:
            why = explain(track, reported, expected, spec)
            out[key] = TaskMatching(rep=rep.rep if rep else None, explanation=why)
    return out
