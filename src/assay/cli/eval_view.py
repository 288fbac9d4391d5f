"""What `assay eval` shows an agent author: every task, every rep, then the metric."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from assay.cli.output import console, fail
from assay.mechanism.spec import Track
from assay.results.scorecard import AgentTrackScore
from assay.validator.round import RoundResult


def _only_score(result: RoundResult, track: Track) -> AgentTrackScore:
    if result.card is None:
        fail(f"the evaluation abstained: {result.reason}")
    (score,) = result.card.scores[track.value].values()
    return score


def eval_json(result: RoundResult, track: Track) -> dict[str, Any]:
    score = _only_score(result, track)
    payload: dict[str, Any] = {
        "track": track.value,
        "agent": next(iter(result.agents)),
        "tasks": score.tasks,
        "score": score.score,
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
                "reps": [{"rep": r.rep, "status": r.status, "reason": r.reason} for r in t.reps],
            }
            for t in score.task_results
        ],
    }
    if track.behavioural and score.confusion is not None:
        c = score.confusion
        payload |= {
            "confusion": {"tp": c.tp, "tn": c.tn, "fp": c.fp, "fn": c.fn},
            "mcc": score.mcc,
            "clamped_mcc": score.clamped_mcc,
            "findings": score.findings,
        }
    else:
        payload |= {"mcc": None, "f2": score.f2}
    return payload


def _rep_cell(status: str, reason: str | None, verdict: str | None) -> str:
    if status == "completed":
        return f"[green]{verdict or 'ok'}[/]"
    return f"[red]{escape(reason or 'failed')}[/]"


def print_eval(result: RoundResult, track: Track) -> None:
    score = _only_score(result, track)
    table = Table(title=f"{track.value}: {score.tasks} tasks", title_justify="left")
    for column in ("task", "label", "F2" if not track.behavioural else "verdict", "reps"):
        table.add_column(column)
    for t in score.task_results:
        outcome = f"{t.f2:.3f}" if t.f2 is not None else (t.verdict or "—")
        mark = "[green]✓[/]" if t.correct else "[red]✗[/]"
        reps = " ".join(_rep_cell(r.status, r.reason, r.verdict) for r in t.reps)
        table.add_row(escape(t.task), t.label, f"{mark} {outcome}", reps)
    console.print(table)
    if score.confusion is not None:
        c = score.confusion
        console.print(f"confusion: TP {c.tp}  FN {c.fn}  FP {c.fp}  TN {c.tn}")
        console.print(
            f"MCC {score.mcc:.3f}  clamped {score.clamped_mcc:.3f}  findings "
            f"{'—' if score.findings is None else f'{score.findings:.3f}'}"
        )
    eligible = "[green]eligible[/]" if score.eligible else "[yellow]not eligible[/]"
    console.print(f"score {score.score:.3f}  threshold {score.threshold:.2f}  {eligible}")
