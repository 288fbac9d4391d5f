"""JUnit XML of per-task results for CI: a test suite per agent and track, a test per task.

A task whose verdict is wrong or whose expected findings were all missed
(behavioural), or whose F2 is below the track threshold (repositories), is a
failure, its message giving the points the task cost; a task where no rep completed is an
error, with each rep's reason and detail; a track the validator abstained on is
a suite of one test in error.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import ClassVar

from assay.mechanism.spec import Track
from assay.records.agent import short_hash
from assay.records.round import RoundResult
from assay.records.scorecard import AgentTrackScore, TaskView
from assay.report.interface import ReportFormat
from assay.report.text import printable
from assay.schema.mechanism_file import pinned


def _rep_lines(result: RoundResult, track: str, agent: str, task: TaskView) -> str:
    lines = []
    for rep in task.reps:
        seen = result.diagnostics.of(track, agent, task.task, rep.rep)
        detail = f" {seen.detail}" if seen and seen.detail else ""
        state = rep.verdict if rep.status == "completed" else f"failed: {rep.reason}{detail}"
        lines.append(printable(f"rep {rep.rep}: {state}", 600))
    return "\n".join(lines)


def _case(
    suite: ET.Element,
    result: RoundResult,
    track: str,
    agent: str,
    task: TaskView,
    score: AgentTrackScore,
) -> tuple[int, int]:
    case = ET.SubElement(
        suite, "testcase", classname=f"{track}.{short_hash(agent)}", name=printable(task.task, 200)
    )
    reps = _rep_lines(result, track, agent, task)
    if all(r.status != "completed" for r in task.reps):
        reasons = ", ".join(sorted({r.reason or "failed" for r in task.reps}))
        ET.SubElement(
            case, "error", message=f"no rep completed ({reasons})", type="no_verdict"
        ).text = reps
        return 0, 1
    ET.SubElement(case, "system-out").text = reps
    lost = score.parts(pinned().findings_weight).lost.get(task.task, 0.0)
    cost = f"; {lost:.3f} of the score lost on this task"
    threshold = score.threshold
    if Track(track).behavioural and not task.correct:
        message = f"verdict {task.verdict} on a {task.label} artifact{cost}"
        ET.SubElement(case, "failure", message=message, type="wrong_verdict")
        return 1, 0
    if Track(track).behavioural and task.findings == 0.0:
        message = f"verdict right, but every expected finding was missed{cost}"
        ET.SubElement(case, "failure", message=message, type="findings_missed")
        return 1, 0
    if not Track(track).behavioural and (task.f2 or 0.0) < threshold:
        message = f"F2 {task.f2 or 0.0:.3f} is below the {threshold:.2f} threshold{cost}"
        ET.SubElement(case, "failure", message=message, type="low_f2")
        return 1, 0
    return 0, 0


def _suite(
    root: ET.Element, result: RoundResult, track: str, agent: str, score: AgentTrackScore
) -> tuple[int, int, int]:
    name = printable(f"{track} · {result.agents.get(agent, 'agent')} {short_hash(agent)}", 200)
    suite = ET.SubElement(root, "testsuite", name=name)
    failures = errors = 0
    for task in score.task_results:
        failed, errored = _case(suite, result, track, agent, task, score)
        failures, errors = failures + failed, errors + errored
    tests = len(score.task_results)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    return tests, failures, errors


def _abstained_suite(root: ET.Element, track: str, why: str) -> tuple[int, int, int]:
    """A track the validator abstained on: one test in error, so CI does not read the
    track's silence as a pass."""
    suite = ET.SubElement(root, "testsuite", name=printable(f"{track} · abstained", 200))
    case = ET.SubElement(suite, "testcase", classname=track, name="abstained")
    ET.SubElement(case, "error", message=printable(why, 600), type="abstained")
    for key in ("tests", "errors"):
        suite.set(key, "1")
    suite.set("failures", "0")
    return 1, 0, 1


def render_junit(result: RoundResult) -> str:
    root = ET.Element("testsuites", name=printable(f"assay {result.kind} {result.round_id}", 200))
    totals = [0, 0, 0]
    for track, why in result.abstained_tracks.items():
        counts = _abstained_suite(root, track, why)
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
    if result.card is not None:
        for track in result.card.scores:
            scores = result.ranked(track)  # a refused agent never ran: it has no tests
            for agent in sorted(scores):
                counts = _suite(root, result, track, agent, scores[agent])
                totals = [a + b for a, b in zip(totals, counts, strict=True)]
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", str(totals[2]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


class JunitFormat(ReportFormat):
    name: ClassVar[str] = "junit"
    suffix: ClassVar[str] = ".xml"

    def render(self, result: RoundResult) -> str:
        return render_junit(result)
