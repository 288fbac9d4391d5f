"""The viewer's pages, each rendered from what `assay.validator.api` reads.

Every page is built with autoescaping (`assay.report.templating`): agent names,
task ids, findings and trace paths are the agents' and artifacts' text, never markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from markupsafe import Markup

from assay.records.round import RoundResult
from assay.records.scorecard import TaskView, score_formula
from assay.report import svg
from assay.report.explained import detonation_lines, detonation_note, pair_lines, speaking_line
from assay.report.html import render_html
from assay.report.templating import environment
from assay.validator.api import (
    AgentRound,
    RoundTrend,
    RunOutcome,
    agent_history,
    list_rounds,
    pinned,
    round_trends,
    stored_result,
    task_reps,
)

_ENV = environment("assay.viewer")
TRACE_SHOWN = 40  # entries of each trace list on a page; the count says how many there were


def href(*parts: str) -> str:
    """A viewer path; every part is percent-quoted (task ids and hashes are input)."""
    return "/" + "/".join(quote(p, safe="") for p in parts)


def short(agent_hash: str) -> str:
    return agent_hash[:12]


_ENV.globals.update(href=href, short=short)


@lru_cache(maxsize=8)
def _recomputed(db: Path, round_id: str, state: tuple[str, int]) -> RoundResult:
    return stored_result(round_id, db)


def _result(db: Path, round_id: str) -> RoundResult:
    """The round recomputed from its rows, once per state: a round's pages share one
    recomputation until its status or its number of stored reps changes."""
    summary = next((s for s in list_rounds(db) if s.round_id == round_id), None)
    if summary is None:
        raise LookupError(f"the store has no round {round_id!r}")
    return _recomputed(db, round_id, (summary.status, summary.reps_stored))


# -- rounds ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Best:
    """The best score a round wrote on one track, and the change from the round before."""

    score: float
    agent: str
    change: float | None


def _best(trends: list[RoundTrend]) -> dict[str, dict[str, Best]]:
    """round id -> track -> its best score, against the last earlier round scoring the track."""
    out: dict[str, dict[str, Best]] = {}
    last: dict[str, float] = {}
    for trend in trends:
        row: dict[str, Best] = {}
        for track in trend.card.scores if trend.card else ():
            scores = trend.ranked(track)
            if not scores:
                continue
            agent = min(scores, key=lambda a: (-scores[a].score, a))
            best = scores[agent].score
            row[track] = Best(best, agent, best - last[track] if track in last else None)
            last[track] = best
        out[trend.summary.round_id] = row
    return out


# A trend's plot across a desktop card (1,320 px of page less its padding), and one a
# phone shows at its drawn size; the page's CSS shows one of the two. One drawing scaled
# to both would have a desktop's text at a third of its size on a phone, or use a third
# of the desktop's card.
WIDE_PLOT = 1100
NARROW_PLOT = 330


def trend_chart(x_labels: list[str], series: list[svg.LineSeries], *, label: str) -> Markup:
    wide, narrow = (
        svg.line_chart(x_labels, series, label=label, plot_width=width)
        for width in (WIDE_PLOT, NARROW_PLOT)
    )
    return Markup('<div class="trend wide">{}</div><div class="trend narrow">{}</div>').format(
        wide, narrow
    )


def _best_chart(trends: list[RoundTrend], best: dict[str, dict[str, Best]]) -> Markup | None:
    scored = [t.summary.round_id for t in trends if best[t.summary.round_id]]
    if len(scored) < 2:
        return None
    tracks = sorted({track for r in scored for track in best[r]})
    series = [
        svg.LineSeries(
            track, tuple(best[r][track].score if track in best[r] else 0.0 for r in scored)
        )
        for track in tracks
    ]
    return trend_chart(scored, series, label="best score per track over rounds")


def rounds_page(db: Path) -> str:
    trends = round_trends(db)
    best = _best(trends)
    return _ENV.get_template("rounds.html.j2").render(
        db=str(db),
        trends=list(reversed(trends)),
        best=best,
        chart=_best_chart(trends, best),
    )


# -- one round -------------------------------------------------------------------------


def _round_nav(result: RoundResult) -> Markup:
    return Markup(
        _ENV.get_template("round_nav.html.j2").render(
            round_id=result.round_id,
            agents=sorted(result.agents.items(), key=lambda item: (item[1], item[0])),
        )
    )


def round_page(db: Path, round_id: str) -> str:
    result = _result(db, round_id)
    return render_html(result, nav=_round_nav(result))


@dataclass(frozen=True)
class TaskLine:
    view: TaskView
    expected: int  # expected findings (or planted vulnerabilities) of the task
    matched: int


def round_agent_page(db: Path, round_id: str, agent_hash: str) -> str:
    result = _result(db, round_id)
    if agent_hash not in result.agents:
        raise LookupError(f"round {round_id} has no agent {agent_hash}")
    tracks = []
    for track in result.card.scores if result.card else ():
        score = result.ranked(track).get(agent_hash)
        if score is None:
            continue
        lines = []
        for view in score.task_results:
            matching = result.matching.get((agent_hash, track, view.task))
            hits = matching.matched if matching is not None else ()
            lines.append(TaskLine(view, len(hits), sum(hits)))
        tracks.append((track, score, lines))
    return _ENV.get_template("round_agent.html.j2").render(
        round_id=round_id,
        status=result.status,
        agent_hash=agent_hash,
        name=result.agents[agent_hash],
        tracks=tracks,
        refused=sorted(result.refusals.get(agent_hash, {}).items()),
    )


# -- one agent across rounds -----------------------------------------------------------


def _score_chart(history: list[AgentRound]) -> Markup | None:
    scored = [h for h in history if h.scores]
    if len(scored) < 2:
        return None
    tracks = sorted({t for h in scored for t in h.scores})
    series = [
        svg.LineSeries(
            track, tuple(h.scores[track].score if track in h.scores else 0.0 for h in scored)
        )
        for track in tracks
    ]
    return trend_chart([h.round_id for h in scored], series, label="score per track over rounds")


def agent_page(db: Path, agent_hash: str) -> str:
    history = agent_history(agent_hash, db)
    if not history:
        raise LookupError(f"no round in the store pinned agent {agent_hash}")
    return _ENV.get_template("agent.html.j2").render(
        agent_hash=agent_hash,
        names=sorted({h.name for h in history}),
        history=list(reversed(history)),
        tracks=sorted({t for h in history for t in (*h.scores, *h.refused)}),
        chart=_score_chart(history),
    )


# -- one task of one agent: the drill-down ---------------------------------------------


def task_page(db: Path, round_id: str, agent_hash: str, track: str, task: str) -> str:
    result = _result(db, round_id)
    reps: list[RunOutcome] = task_reps(round_id, agent_hash, track, task, db)
    scores = result.card.scores.get(track, {}) if result.card else {}
    score = scores.get(agent_hash)
    view = next((t for t in score.task_results if t.task == task), None) if score else None
    if not reps and view is None:
        raise LookupError(f"round {round_id} has no task {track}/{task} for agent {agent_hash}")
    key = (agent_hash, track, task)
    speaking = result.speaking.get(key)
    observed = result.observed.get((track, task))
    w_f = pinned().findings_weight
    parts = score.parts(w_f) if score else None
    return _ENV.get_template("task.html.j2").render(
        round_id=round_id,
        agent_hash=agent_hash,
        name=result.agents.get(agent_hash, "(unknown)"),
        track=track,
        task=task,
        view=view,
        matching=result.matching.get(key),
        pairs=pair_lines(result.matching[key]) if key in result.matching else [],
        speaking_line=speaking_line(result.matching[key]) if key in result.matching else "",
        speaking=speaking.rep if speaking else None,
        records={r.rep: r for r in result.records if (r.agent, r.track.value, r.task) == key},
        reps=reps,
        budget=score.cpu_budget_s if score else None,
        trace_shown=TRACE_SHOWN,
        detonation=detonation_note(observed),
        observed=detonation_lines(observed) if observed else [],
        lost=parts.lost.get(task) if parts else None,
        parts=parts if track != "repositories" else None,  # a mean F2 has no verdict part
        formula=score_formula(track != "repositories", w_f),
    )
