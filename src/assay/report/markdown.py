"""Markdown for a pull-request comment: rankings, weights and failures, nothing executable.

Every string an agent, an artifact or a corpus chose is an inline code span
(`report.text.markdown`): no link, @mention or HTML of theirs comes alive in a comment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from assay.mechanism.spec import Track
from assay.records.agent import short_hash
from assay.records.diagnostics import RepDiagnostic
from assay.records.round import RoundResult
from assay.records.scorecard import AgentTrackScore, RepView, pay_rule, score_formula
from assay.report.explained import (
    detonation_lines,
    detonation_note,
    pair_lines,
    rep_line,
    speaking_line,
)
from assay.report.interface import ReportFormat
from assay.report.text import markdown as md
from assay.schema.mechanism_file import pinned

FAILURES_SHOWN = 20


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _agent(result: RoundResult, agent: str) -> str:
    return f"{md(result.agents.get(agent, 'agent'), 60)} `{short_hash(agent)}`"


def _track(result: RoundResult, track: str, scores: dict[str, AgentTrackScore]) -> list[str]:
    behavioural = Track(track).behavioural
    threshold = next(iter(scores.values())).threshold if scores else 0.0
    w_f = pinned().findings_weight
    metric = score_formula(behavioural, w_f)
    columns = ["rank", "agent", "score", "interval"]
    columns += ["MCC", "findings", "verdicts + findings"] if behavioural else ["F2"]
    ordered = sorted(scores.items(), key=lambda kv: (kv[1].rank or 1 << 30, -kv[1].score, kv[0]))
    rows = [
        [
            str(s.rank or "—"),
            _agent(result, agent),
            _num(s.score),
            s.interval.text if s.interval else "—",
            *([_num(s.mcc), _num(s.findings), _parts(s, w_f)] if behavioural else [_num(s.f2)]),
            str(s.failed_reps),
            "yes" if s.eligible else "no",
        ]
        for agent, s in ordered
    ]
    head = [f"### {track}: {metric}, threshold {threshold:.2f}", ""]
    held = result.card.stability.get(track) if result.card else None
    sure = [f"How sure: {held.text}.", ""] if held else []
    if result.kind != "eval":
        sure += [f"Pay: {pay_rule(pinned().top_split, scores)}.", ""]
    refused = [
        f"- refused {_agent(result, agent)}: {md(why, 300)} (not ranked)"
        for agent, why in result.refused_on(track).items()
    ]
    table = _table([*columns, "failed reps", "eligible"], rows)
    return [*head, *table, "", *sure, *refused, *([""] if refused else [])]


def _parts(score: AgentTrackScore, findings_weight: float) -> str:
    parts = score.parts(findings_weight)
    return f"{parts.verdict:.3f} + {parts.findings:.3f}"


def _lost(lost: float) -> str:
    return f"−{lost:.3f}" if lost >= 0.0005 else "0"


def _rep_word(rep: RepView) -> str:
    if rep.status == "completed":
        return rep.verdict or "ok"
    return md(rep.reason or "failed")


def _tasks(result: RoundResult, track: str, scores: dict[str, AgentTrackScore]) -> list[str]:
    """An eval's one agent, task by task, then each task's findings beside the expected."""
    lines: list[str] = []
    for agent, score in scores.items():
        lost = score.parts(pinned().findings_weight).lost
        rows = [
            [
                md(t.task, 80),
                t.label,
                f"{t.f2:.3f}" if t.f2 is not None else (t.verdict or "no verdict"),
                "✓" if t.correct else "✗",
                _lost(lost.get(t.task, 0.0)),
                " ".join(_rep_word(r) for r in t.reps),
            ]
            for t in score.task_results
        ]
        lines += [*_table(["task", "label", "result", "", "points lost", "reps"], rows), ""]
        lines += _task_findings(result, track, agent, score)
    return lines


def _task_findings(
    result: RoundResult, track: str, agent: str, score: AgentTrackScore
) -> list[str]:
    lines: list[str] = []
    for t in score.task_results:
        matching = result.matching.get((agent, track, t.task))
        failed = [r for r in t.reps if r.status != "completed"]
        if matching is None and not failed and (track, t.task) not in result.observed:
            continue
        lines.append(f"**{md(t.task, 80)}** ({t.label})")
        lines.append("")
        for r in failed:
            lines.append(f"- {md(rep_line(r, result.diagnostics.of(track, agent, t.task, r.rep)))}")
        observed = result.observed.get((track, t.task))
        lines.append(f"- observed: {md(detonation_note(observed))}")
        for c in detonation_lines(observed) if observed else []:
            lines.append(f"  - {md(c.head)}")
            lines += [f"    - {md(e)}" for e in c.evidence]
        if matching is not None:
            lines.append(f"- {speaking_line(matching)}")
            for pair in pair_lines(matching):
                lines.append(f"- {pair.mark} {md(pair.head)}: {md(pair.partner)}")
                lines += [f"  - {md(check)}" for check in pair.checks]
        lines.append("")
    return ["#### Findings beside the expected ones, task by task", "", *lines] if lines else []


def _failures(result: RoundResult, failed: Sequence[RepDiagnostic]) -> list[str]:
    if not failed:
        return []
    lines = [f"### Failed reps ({len(failed)})", ""]
    for d in failed[:FAILURES_SHOWN]:
        lines.append(
            f"- {_agent(result, d.agent)} {d.track.value} {md(d.task, 80)} rep {d.rep}: "
            f"**{md(d.reason or 'failed')}** (CPU {d.cpu_text}) "
            f"{md(d.detail, 300)}"
        )
    if len(failed) > FAILURES_SHOWN:
        lines.append(f"- … and {len(failed) - FAILURES_SHOWN} more (see the JSON report)")
    return [*lines, ""]


def _weights(result: RoundResult) -> list[str]:
    if result.kind == "eval":
        return []
    ordered = sorted(result.weights.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [
        [_agent(result, a), f"{w:.6f}", f"{result.round_weights.get(a, 0.0):.6f}"]
        for a, w in ordered
    ]
    if not rows:
        return ["No agent is eligible on any track: no weights were written.", ""]
    return ["### Weights", "", *_table(["agent", "written (EMA)", "this round"], rows), ""]


def _abstained_tracks(result: RoundResult) -> list[str]:
    if not result.abstained_tracks:
        return []
    lines = ["### Abstained tracks", ""]
    for track, why in result.abstained_tracks.items():
        lines.append(
            f"- **{track}**: not scored, its share split as an idle track's; {md(why, 300)}"
        )
    return [*lines, ""]


def render_markdown(result: RoundResult) -> str:
    title = "eval" if result.kind == "eval" else "round"
    lines = [
        f"## assay {title} {result.round_id}: {result.status}",
        "",
        f"Mechanism {result.plan.mechanism_version} · seed {md(result.plan.round_seed)}",
        "",
    ]
    if result.card is None:
        abstained = f"Abstained: {md(result.reason or 'no reason recorded')}"
        return "\n".join([*lines, abstained, "", *_abstained_tracks(result)])
    lines += _abstained_tracks(result)
    for track in result.card.scores:
        scores = result.ranked(track)
        lines += _track(result, track, scores)
        if result.kind == "eval":
            lines += _tasks(result, track, scores)
    lines += _weights(result)
    lines += _failures(result, result.failed_reps())
    return "\n".join(lines)


class MarkdownFormat(ReportFormat):
    name: ClassVar[str] = "markdown"
    suffix: ClassVar[str] = ".md"

    def render(self, result: RoundResult) -> str:
        return render_markdown(result)
