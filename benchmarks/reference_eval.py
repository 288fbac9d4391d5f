"""Score the reference agent (or any agent file or package) in-process on the bundled corpus:
per track, on the tuning part (corpus/) and on the set-aside part (corpus-eval/).

Usage: python benchmarks/reference_eval.py [AGENT.py | AGENT_PACKAGE/ ...] [--verbose]
           [--part tuning|set-aside] [--track TRACK ...]

`--part tuning` never loads the set-aside part, so the tuning loop cannot spend it;
`--verbose` lists per-task results on the tuning part only, for the same reason.

A package is bundled first (`assay agent bundle`), so what is scored is what is submitted.
The set-aside part is for measuring only: tuning detectors against it spends it.

Each agent is imported and `agent_main` called once per task, with a context
shaped like the sandbox's (probe inside a temporary workspace, observed=None).
This is not the sealed sandbox: it is the quick loop for tuning detectors; the
real measurement is `assay eval`. DNS is refused so the probe stays offline.
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from assay.corpus.interface import Task
from assay.corpus.native import NativeCorpus
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.scoring import RepResult, TaskTruth, TrackScore, score_track
from assay.mechanism.spec import TRACKS, Track
from assay.runner.bundle import bundle_package
from assay.runner.context import local_context
from assay.schema.mechanism_file import pinned

SPEC = pinned()

ROOT = Path(__file__).resolve().parents[1]
Agent = Callable[[dict[str, Any]], dict[str, Any]]


def load_agent(path: Path) -> Agent:
    limit = SPEC.sandbox.agent_code_bytes
    code = bundle_package(path, max_bytes=limit).code if path.is_dir() else path.read_bytes()
    module = ModuleType(f"agent_{path.stem}")
    exec(compile(code, str(path), "exec"), module.__dict__)
    main: Agent = module.agent_main
    return main


def truth_of(task: Task) -> TaskTruth:
    return TaskTruth(
        task.task_id,
        task.label.value,
        task.expected_items(),
        task.planted_items(),
    )


def run_track(agent: Agent, track: Track, tasks: tuple[Task, ...]) -> tuple[TrackScore, float]:
    scored = []
    slowest = 0.0
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            report = agent(local_context(task.track, task.artifact_dir, Path(tmp)))
            slowest = max(slowest, time.perf_counter() - started)
        rep = RepResult(
            completed=True,
            verdict=report["verdict"]["decision"],
            findings=tuple(map(FindingItem.of, report.get("findings", []))),
            vulnerabilities=tuple(
                map(VulnerabilityItem.of, report.get("evidence", {}).get("vulnerabilities") or [])
            ),
        )
        scored.append((truth_of(task), [rep]))
    return score_track(track, scored, spec=SPEC), slowest


def _refuse_dns(*args: object, **kwargs: object) -> list[Any]:
    raise OSError("no network in the in-process evaluation")


PARTS = {"tuning": "corpus", "set-aside": "corpus-eval"}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="*", type=Path, default=[ROOT / "agents/reference"])
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--part", choices=sorted(PARTS), action="append")
    parser.add_argument("--track", choices=[t.value for t in TRACKS], action="append")
    args = parser.parse_args(argv)
    socket.getaddrinfo = _refuse_dns  # type: ignore[assignment]
    parts = {part: NativeCorpus(ROOT / PARTS[part]) for part in args.part or PARTS}
    tracks = [Track(t) for t in args.track] if args.track else TRACKS
    for path in args.agents:
        agent = load_agent(path)
        print(f"== {path.name}")
        for track in tracks:
            for part, corpus in parts.items():
                result, slowest = run_track(agent, track, corpus.tasks(track))
                _print_track(part, result, slowest, args.verbose and part == "tuning")
    return 0


def _print_track(part: str, result: TrackScore, slowest: float, verbose: bool) -> None:
    print(f"  {result.track.value:13} {part:9} {len(result.tasks):3} tasks", end="  ")
    if result.track is Track.REPOSITORIES:
        print(
            f"mean F2 {result.f2:.3f}  "
            f"chance-corrected score {result.score:.3f}   (slowest task {slowest:.3f}s)"
        )
        for task in result.tasks if verbose else ():
            print(f"      {task.task_id:34} {task.label:9} F2 {task.f2:.3f}")
        return
    c = result.confusion
    assert c is not None
    findings = "n/a" if result.findings is None else f"{result.findings:.3f}"
    print(
        f"clamped MCC {result.clamped_mcc:.3f}  findings {findings}  "
        f"score {result.score:.3f}  tp {c.tp} tn {c.tn} fp {c.fp} fn {c.fn}  "
        f"(slowest task {slowest:.3f}s)"
    )
    for task in result.tasks if verbose else ():
        extra = "" if task.findings is None else f" findings {task.findings:.2f}"
        print(f"      {task.task_id:34} {task.label:9} {task.verdict}{extra}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
