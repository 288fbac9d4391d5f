"""What `assay eval` shows an agent author: every task, every rep, then the metric."""

from __future__ import annotations

from typing import Any

import msgspec
from rich.markup import escape
from rich.table import Table

from assay.cli.output import console, fail, print_failures, print_inference
from assay.records.diagnostics import RepDiagnostic
from assay.records.matching import MatchingKey
from assay.records.round import RoundResult
from assay.records.scorecard import AgentTrackScore, RepView, TaskView, score_formula
from assay.validator.api import Track, pair_lines, pinned, rep_line, speaking_line


def _only_score(result: RoundResult, track: Track) -> AgentTrackScore:
    if result.card is None:
        fail(f"the evaluation abstained: {result.reason}")
    (score,) = result.card.scores[track.value].values()
    return score


def eval_json(result: RoundResult, track: Track) -> dict[str, Any]:
    score = _only_score(result, track)
    agent = next(iter(result.agents))
    payload: dict[str, Any] = {
        "track": track.value,
        "agent": agent,
        "tasks": score.tasks,
        "score": score.score,
        "interval": msgspec.to_builtins(score.interval) if score.interval else None,
        "threshold": score.threshold,
        "eligible": score.eligible,
        "mechanism_digest": result.plan.mechanism_digest,
        "task_results": [
            {
                "task": t.task,
                "label": t.label,
                **({"f2": t.f2} if not track.behavioural else {"verdict": t.verdict}),
                "correct": t.correct,
                "findings": t.findings,
                "reps": [
                    _rep_json(r, result.diagnostics.of(track, agent, t.task, r.rep)) for r in t.reps
                ],
                "matching": _matching_json(result, (agent, track.value, t.task)),
            }
            for t in score.task_results
        ],
    }
    if track.behavioural and score.confusion is not None:
        c = score.confusion
        payload |= {
            "confusion": {
                "tp": c.tp,
                "tn": c.tn,
                "fp": c.fp,
                "fn": c.fn,
                "no_verdict": c.no_verdict,
            },
            "mcc": score.mcc,
            "clamped_mcc": score.clamped_mcc,
            "findings": score.findings,
        }
    else:
        payload |= {"mcc": None, "f2": score.f2}
    return payload


def _matching_json(result: RoundResult, key: MatchingKey) -> dict[str, Any] | None:
    matching = result.matching.get(key)
    return matching.to_json() if matching is not None else None


def _rep_json(rep: RepView, seen: RepDiagnostic | None) -> dict[str, Any]:
    return {
        "rep": rep.rep,
        "status": rep.status,
        "verdict": rep.verdict,
        "reason": rep.reason,
        "detail": seen.detail if seen else "",
        "cpu_s": seen.cpu_s if seen else None,
        "cpu_budget_s": seen.cpu_budget_s if seen else None,
        "inference": msgspec.to_builtins(seen.inference) if seen and seen.inference else None,
    }


def _rep_cell(rep: RepView) -> str:
    if rep.status == "completed":
        return f"[green]{rep.verdict or 'ok'}[/]"
    return f"[red]{escape(rep.reason or 'failed')}[/]"


def print_task_details(result: RoundResult, track: Track, agent: str, task: TaskView) -> None:
    """One task's reps (verdicts, failures and what they mean) and its findings beside the
    expected ones, each pair with the matcher's reasons."""
    console.print(f"[bold]{escape(task.task)}[/] ({task.label})", highlight=False)
    for rep in task.reps:
        seen = result.diagnostics.of(track.value, agent, task.task, rep.rep)
        console.print(f"  {escape(rep_line(rep, seen))}", highlight=False, soft_wrap=True)
    matching = result.matching.get((agent, track.value, task.task))
    if matching is None:
        return
    console.print(f"  [dim]{escape(speaking_line(matching))}[/]", highlight=False)
    for pair in pair_lines(matching):
        colour = _PAIR_COLOURS[pair.state]
        console.print(
            f"  [{colour}]{pair.mark}[/] {escape(pair.head)}", highlight=False, soft_wrap=True
        )
        console.print(f"      {escape(pair.partner)}", highlight=False, soft_wrap=True)
        for check in pair.checks:
            console.print(f"        [dim]{escape(check)}[/]", highlight=False, soft_wrap=True)


_PAIR_COLOURS = {"matched": "green", "missed": "red", "extra": "yellow"}


def _lost_cell(lost: float) -> str:
    return f"[red]−{lost:.3f}[/]" if lost >= 0.0005 else "0"


def print_eval(result: RoundResult, track: Track, verbose: bool = False) -> None:
    score = _only_score(result, track)
    w_f = pinned().findings_weight
    parts = score.parts(w_f)
    table = Table(title=f"{track.value}: {score.tasks} tasks", title_justify="left")
    outcome_column = "F2" if not track.behavioural else "verdict"
    for column in ("task", "label", outcome_column, "points lost", "reps"):
        table.add_column(column, justify="right" if column == "points lost" else "left")
    for t in score.task_results:
        outcome = f"{t.f2:.3f}" if t.f2 is not None else (t.verdict or "—")
        mark = "[green]✓[/]" if t.correct else "[red]✗[/]"
        reps = " ".join(_rep_cell(r) for r in t.reps)
        lost = parts.lost.get(t.task, 0.0)
        table.add_row(escape(t.task), t.label, f"{mark} {outcome}", _lost_cell(lost), reps)
    console.print(table)
    if verbose:
        agent = next(iter(result.agents))
        for t in score.task_results:
            print_task_details(result, track, agent, t)
    print_failures(result.diagnostics.failed(), "failed reps")
    print_inference(result)
    if score.confusion is not None:
        c = score.confusion
        silent = f"  (no verdict on {c.no_verdict}, counted as wrong)" if c.no_verdict else ""
        console.print(f"confusion: TP {c.tp}  FN {c.fn}  FP {c.fp}  TN {c.tn}{silent}")
        console.print(
            f"MCC {score.mcc:.3f}  clamped {score.clamped_mcc:.3f}  findings "
            f"{'—' if score.findings is None else f'{score.findings:.3f}'}"
        )
    eligible = "[green]eligible[/]" if score.eligible else "[yellow]not eligible[/]"
    split = (
        f" = verdicts {parts.verdict:.3f} + findings {parts.findings:.3f}"
        if track.behavioural
        else ""
    )
    console.print(
        f"score {score.score:.3f}{split}  threshold {score.threshold:.2f}  {eligible}",
        highlight=False,
    )
    console.print(f"[dim]{score_formula(track.behavioural, w_f)}[/]", highlight=False)
    if score.interval is not None:
        console.print(
            f"[dim]{score.interval.level:.0%} interval over the tasks {score.interval.text}: "
            "another draw of as many tasks could score anywhere in it[/]"
        )
