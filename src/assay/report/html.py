"""The HTML report: one self-contained file with inline CSS and SVG, readable offline.

The template is rendered with autoescaping on and every chart is built by
`assay.report.svg`, which escapes its text too: nothing an agent controls
(its name, a failure reason) can become markup. No resource is fetched.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from markupsafe import Markup

from assay.mechanism.spec import Track
from assay.records.agent import short_hash
from assay.records.chain import YumaPreview
from assay.records.diagnostics import Diagnostics, RepDiagnostic
from assay.records.matching import MatchingKey, TaskMatching
from assay.records.observed import Observed
from assay.records.plan import PlannedTask
from assay.records.round import RoundResult
from assay.records.scorecard import (
    AgentTrackScore,
    ScoreParts,
    TaskView,
    pay_rule,
    score_formula,
)
from assay.report import svg
from assay.report.explained import (
    CapabilityLines,
    PairLines,
    detonation_lines,
    detonation_note,
    pair_lines,
    rep_line,
    speaking_line,
)
from assay.report.interface import ReportFormat, write_document
from assay.report.templating import environment
from assay.schema.mechanism_file import pinned

NAME_LIMIT = 22  # characters of an agent name shown before it is cut (full name on hover)


_ENV = environment("assay.report")


@dataclass(frozen=True)
class Agent:
    """How one agent is named everywhere in the report."""

    agent_hash: str
    name: str

    @property
    def short(self) -> str:
        return short_hash(self.agent_hash)

    @property
    def label(self) -> str:
        return f"{svg.truncate(self.name, NAME_LIMIT)} · {self.short}"

    @property
    def full(self) -> str:
        return f"{self.name} ({self.agent_hash})"


@dataclass(frozen=True)
class FailedRep:
    agent: Agent
    task: str
    rep: int
    reason: str
    cpu: str
    detail: str


FAILED_REPS_SHOWN = 200  # per track; the JSON report lists every one


@dataclass(frozen=True)
class RankingRow:
    agent: Agent
    score: AgentTrackScore
    reps: int
    cpu: str  # CPU per rep against the track budget
    parts: ScoreParts  # the verdict and findings parts, and each task's points lost


@dataclass(frozen=True)
class TaskRow:
    task: str
    label: str
    reps: list[str]  # each rep's verdict, or its failure and detail, in rep order
    outcome: str  # the consensus verdict, or the F2
    state: str  # correct | wrong | failed | scored
    speaking: str  # which rep's report the pairs are of
    pairs: list[PairLines]  # expected items beside reported ones, with why
    lost: float  # the task's share of the points the agent lost on the track
    detonation: str  # the validator's detonation in one line (missing, disturbed, ...)
    observed: list[CapabilityLines]  # what it saw the artifact do, with the evidence


@dataclass(frozen=True)
class AgentTasks:
    agent: Agent
    rows: list[TaskRow]


TASK_TABLES_OPEN = 8  # per-task tables start open for up to this many agents


@dataclass(frozen=True)
class TrackSection:
    track: str
    behavioural: bool
    threshold: float
    tasks: list[str]
    ranking: list[RankingRow]
    score_chart: Markup
    heatmaps: list[tuple[Agent, Markup, int]]  # agent, matrix, tasks without a verdict
    grid: Markup
    failures: Markup | None
    reason_colours: dict[str, str]
    failed_reps: list[FailedRep]
    failed_total: int
    task_tables: list[AgentTasks]
    winner: RankingRow | None
    level: str  # the score intervals' confidence level, e.g. "95%"
    stability: str  # how often the top three keep their order ("" with one agent)
    refused: list[tuple[Agent, str]]  # refused on this track, with why: never ranked
    formula: str  # how the score is made, with the pinned weights
    findings_weight: float  # the pinned w_f
    pay: str  # how the track's share is paid, ties included


@dataclass(frozen=True)
class WeightRow:
    agent: Agent
    round_weight: float
    weight: float


# -- per-task cells ------------------------------------------------------------------


def _rep_lines(task: TaskView) -> list[str]:
    lines = []
    for rep in task.reps:
        if rep.status == "completed":
            lines.append(f"rep {rep.rep}: completed {rep.verdict or ''}".rstrip())
        else:
            lines.append(f"rep {rep.rep}: failed ({rep.reason})")
    return lines


def _cell(task: TaskView, behavioural: bool) -> svg.GridCell:
    failed = [r for r in task.reps if r.status != "completed"]
    all_failed = len(failed) == len(task.reps)
    head = [f"task {task.task} ({task.label})"]
    if all_failed:
        reasons = ", ".join(sorted({r.reason or "unknown" for r in failed}))
        head.append(f"FAILED: every rep failed ({reasons})")
        state: svg.CellState = "failed"
    elif behavioural:
        state = "correct" if task.correct else "wrong"
        head.append(f"verdict {task.verdict}: {state}")
        if task.findings is not None:
            head.append(f"findings score {task.findings:.3f}")
    else:
        state = "scored"
        head.append(f"F2 {task.f2 or 0.0:.3f}")
    return svg.GridCell(
        state=state,
        tooltip="\n".join(head + _rep_lines(task)),
        shade=None if behavioural else task.f2,
        partial=bool(failed) and not all_failed,
    )


# -- one track -----------------------------------------------------------------------


def _ordered(scores: dict[str, AgentTrackScore], agents: dict[str, Agent]) -> list[str]:
    """Ranked agents first, then the rest by score: the order of the ranking table."""

    def key(agent_hash: str) -> tuple[int, float, str]:
        score = scores[agent_hash]
        return (score.rank or 1 << 30, -score.score, agents[agent_hash].name)

    return sorted(scores, key=key)


def _score_chart(track: str, rows: list[RankingRow], threshold: float) -> Markup:
    """Each agent's score as one bar, split into its verdict and findings parts."""
    behavioural = Track(track).behavioural
    bars = [
        svg.BarRow(
            label=row.agent.label,
            tooltip=f"{row.agent.full}\nscore {row.score.score:.3f}"
            + ("" if row.score.eligible else " (below threshold)")
            + (
                f"\nverdicts {row.parts.verdict:.3f} + findings {row.parts.findings:.3f}"
                if behavioural
                else ""
            ),
            values=(row.parts.verdict, row.parts.findings) if behavioural else (row.score.score,),
            kind="eligible" if row.score.eligible else "ineligible",
        )
        for row in rows
    ]
    series = ("verdict", "findings") if behavioural else ("score",)
    return svg.bar_chart(
        bars, series=series, threshold=threshold, label=f"{track} scores", stacked=behavioural
    )


def _failure_chart(track: str, rows: list[RankingRow], colours: dict[str, str]) -> Markup | None:
    failing = [row for row in rows if row.score.failed_reps]
    if not failing:
        return None
    bars = [
        svg.FailureRow(
            label=row.agent.label,
            tooltip=row.agent.full
            + "".join(f"\n{r}: {n}" for r, n in sorted(row.score.failure_reasons.items())),
            counts=row.score.failure_reasons,
            reps=row.reps,
        )
        for row in failing
    ]
    return svg.failure_bars(bars, colours, label=f"{track} failures by reason")


def _failed_reps(failed: Sequence[RepDiagnostic], agents: dict[str, Agent]) -> list[FailedRep]:
    return [
        FailedRep(
            agent=agents[d.agent],
            task=d.task,
            rep=d.rep,
            reason=d.reason or "unknown",
            cpu=d.cpu_text,
            detail=d.detail,
        )
        for d in failed
    ]


# -- per-task tables -----------------------------------------------------------------


@dataclass(frozen=True)
class _Lookups:
    """What every track section reads from the round, gathered once per report."""

    matching: dict[MatchingKey, TaskMatching]
    truth: dict[tuple[str, str], PlannedTask]  # (track, task)
    diagnostics: Diagnostics
    failed: dict[str, list[RepDiagnostic]]  # track -> failed reps
    used: dict[tuple[str, str], list[RepDiagnostic]]  # (track, agent) -> every rep
    observed: dict[tuple[str, str], Observed]  # (track, task) -> its detonation

    @classmethod
    def of(cls, result: RoundResult) -> _Lookups:
        failed: dict[str, list[RepDiagnostic]] = defaultdict(list)
        for d in result.failed_reps():
            failed[d.track.value].append(d)
        used: dict[tuple[str, str], list[RepDiagnostic]] = defaultdict(list)
        for (track, agent, _, _), seen in sorted(result.diagnostics.reps.items()):
            used[(track, agent)].append(seen)
        return cls(
            matching=result.matching,
            truth={(t.track.value, t.task_id): t for t in result.plan.tasks},
            diagnostics=result.diagnostics,
            failed=failed,
            used=used,
            observed=result.observed,
        )


def _task_row(
    task: TaskView, key: MatchingKey, truth: PlannedTask | None, lookups: _Lookups, lost: float
) -> TaskRow:
    cell = _cell(task, truth is None or truth.track.behavioural)
    agent, track, _ = key
    reps = [rep_line(r, lookups.diagnostics.of(track, agent, task.task, r.rep)) for r in task.reps]
    outcome = f"F2 {task.f2:.3f}" if task.f2 is not None else (task.verdict or "no verdict")
    matching = lookups.matching.get(key)
    observed = lookups.observed.get((track, task.task))
    return TaskRow(
        task.task,
        task.label,
        reps,
        outcome,
        cell.state,
        speaking_line(matching) if matching else "",
        pair_lines(matching) if matching else [],
        lost,
        detonation_note(observed),
        detonation_lines(observed) if observed else [],
    )


def _task_tables(track: str, ranking: list[RankingRow], lookups: _Lookups) -> list[AgentTasks]:
    return [
        AgentTasks(
            row.agent,
            [
                _task_row(
                    t,
                    (row.agent.agent_hash, track, t.task),
                    lookups.truth.get((track, t.task)),
                    lookups,
                    row.parts.lost.get(t.task, 0.0),
                )
                for t in row.score.task_results
            ],
        )
        for row in ranking
    ]


def _cpu(seen: list[RepDiagnostic]) -> str:
    if not seen:
        return "—"
    used = [d.cpu_s for d in seen]
    return (
        f"mean {sum(used) / len(used):.2f} s · max {max(used):.2f} s of {seen[0].cpu_budget_s:g} s"
    )


def _level(ranking: Sequence[RankingRow]) -> str:
    shown = next((r.score.interval for r in ranking if r.score.interval), None)
    return f"{shown.level:.0%}" if shown else ""


def _section(
    track: str,
    result: RoundResult,
    agents: dict[str, Agent],
    lookups: _Lookups,
) -> TrackSection:
    behavioural = Track(track).behavioural
    scores = result.ranked(track)
    reps = result.plan.reps.get(Track(track), 0)
    held = result.card.stability.get(track) if result.card is not None else None
    order = _ordered(scores, agents)
    w_f = pinned().findings_weight
    ranking = [
        RankingRow(
            agents[a],
            scores[a],
            scores[a].tasks * reps,
            _cpu(lookups.used[(track, a)]),
            scores[a].parts(w_f),
        )
        for a in order
    ]
    threshold = ranking[0].score.threshold if ranking else 0.0
    tasks = [t.task for t in ranking[0].score.task_results] if ranking else []
    grid_rows = [
        svg.GridRow(
            label=row.agent.label,
            tooltip=row.agent.full,
            cells=tuple(_cell(t, behavioural) for t in row.score.task_results),
        )
        for row in ranking
    ]
    reasons = {reason for row in ranking for reason in row.score.failure_reasons}
    colours = svg.reason_colours(list(reasons))
    heatmaps = [
        (
            row.agent,
            svg.confusion_heatmap(row.score.confusion, f"{row.agent.full} confusion"),
            row.score.confusion.no_verdict,
        )
        for row in ranking
        if row.score.confusion is not None
    ]
    refused = result.refused_on(track)
    failed = _failed_reps(lookups.failed[track], agents)
    return TrackSection(
        track=track,
        behavioural=behavioural,
        threshold=threshold,
        tasks=tasks,
        ranking=ranking,
        score_chart=_score_chart(track, ranking, threshold),
        heatmaps=heatmaps,
        grid=svg.outcome_grid(tasks, grid_rows, label=f"{track} agent by task outcomes"),
        failures=_failure_chart(track, ranking, colours),
        reason_colours=colours,
        failed_reps=failed[:FAILED_REPS_SHOWN],
        failed_total=len(failed),
        task_tables=_task_tables(track, ranking, lookups),
        winner=next((row for row in ranking if row.score.rank == 1), None),
        level=_level(ranking),
        stability=held.text if held else "",
        refused=[(agents[a], why) for a, why in refused.items()],
        formula=score_formula(behavioural, w_f),
        findings_weight=w_f,
        pay=pay_rule(pinned().top_split, scores),
    )


# -- whole report --------------------------------------------------------------------


def _agents(result: RoundResult) -> dict[str, Agent]:
    """Every agent the report mentions, including ones only present in the EMA'd weights."""
    seen = set(result.agents) | set(result.weights) | set(result.round_weights)
    seen |= set(result.refusals)
    if result.card is not None:
        seen |= {a for scores in result.card.scores.values() for a in scores}
    return {h: Agent(h, result.agents.get(h, "(earlier round)")) for h in sorted(seen)}


def _weights(result: RoundResult, agents: dict[str, Agent]) -> list[WeightRow]:
    keys = set(result.weights) | set(result.round_weights)
    rows = [
        WeightRow(agents[a], result.round_weights.get(a, 0.0), result.weights.get(a, 0.0))
        for a in keys
    ]
    return sorted(rows, key=lambda r: (-r.weight, -r.round_weight, r.agent.name))


def _weight_chart(rows: Sequence[WeightRow]) -> Markup | None:
    if not rows:
        return None
    bars = [
        svg.BarRow(
            label=row.agent.label,
            tooltip=f"{row.agent.full}\nthis round {row.round_weight:.4f}\n"
            f"written (EMA) {row.weight:.4f}",
            values=(row.round_weight, row.weight),
        )
        for row in rows
    ]
    return svg.bar_chart(bars, series=("round", "ema"), label="weight vector")


def _failure_totals(sections: Sequence[TrackSection]) -> Counter[str]:
    totals: Counter[str] = Counter()
    for section in sections:
        for row in section.ranking:
            totals.update(row.score.failure_reasons)
    return totals


def render_html(
    result: RoundResult, nav: Markup | None = None, yuma: YumaPreview | None = None
) -> str:
    """The report; `nav` is a bar a host page puts above it (the viewer's links); `yuma`,
    the subnet's consensus on the round's weights, adds a section."""
    agents = _agents(result)
    scores = result.card.scores if result.card is not None else {}
    reps = {t.value: n for t, n in result.plan.reps.items()}
    lookups = _Lookups.of(result)
    sections = [
        _section(track, result, agents, lookups)
        for track in [t.value for t in result.plan.tracks if t.value in scores]
    ]
    weights = _weights(result, agents)
    return _ENV.get_template("report.html.j2").render(
        result=result,
        plan=result.plan,
        draw=result.plan.draw(),
        reps=reps,
        agents=sorted((agents[a] for a in result.agents), key=lambda a: (a.name, a.agent_hash)),
        sections=sections,
        weights=weights,
        weight_chart=_weight_chart(weights),
        history_chart=_history_chart(result, agents),
        failure_totals=sorted(_failure_totals(sections).items()),
        is_eval=result.kind == "eval",
        open_tables=len(result.agents) <= TASK_TABLES_OPEN,
        inference=[(agents[t.agent], t) for t in result.diagnostics.inference()],
        nav=nav,
        yuma=yuma,
        yuma_miners=yuma.miners[:YUMA_MINERS_SHOWN] if yuma else (),
    )


YUMA_MINERS_SHOWN = (
    50  # miners in the consensus table, by incentive (`assay chain preview` lists all)
)
HISTORY_AGENTS = 8  # lines on the weights-over-rounds chart: the heaviest agents


def _history_chart(result: RoundResult, agents: dict[str, Agent]) -> Markup | None:
    history = list(result.weight_history)
    if len(history) < 2:
        return None
    latest = history[-1][1]
    heaviest = sorted(latest, key=lambda a: (-latest[a], a))[:HISTORY_AGENTS]
    series = [
        svg.LineSeries(
            label=agents[a].label if a in agents else short_hash(a),
            values=tuple(weights.get(a, 0.0) for _, weights in history),
        )
        for a in heaviest
    ]
    return svg.line_chart(
        [round_id for round_id, _ in history], series, label="weights over rounds"
    )


class HtmlFormat(ReportFormat):
    name: ClassVar[str] = "html"
    suffix: ClassVar[str] = ".html"

    def render(self, result: RoundResult) -> str:
        return render_html(result)


def write_html(result: RoundResult, path: Path, yuma: YumaPreview | None = None) -> None:
    """Write the round's HTML report to `path` (the CLI's entry point)."""
    write_document(path, render_html(result, yuma=yuma))
