"""Score the reference agent (or any agent file or package) in-process on the bundled corpora:
per corpus and track, on the tuning part and on the set-aside part.

    synthetic  tuning: corpus/              set-aside: corpus-eval/
    real       tuning: corpus-real/tuning/  set-aside: corpus-real/set-aside/

Usage: python benchmarks/reference_eval.py [AGENT.py | AGENT_PACKAGE/ ...] [--verbose]
           [--corpus synthetic|real] [--part tuning|set-aside] [--track TRACK ...]
           [--detonate] [--only SUBSTRING ...]

Without agents named, the reference agent is scored beside the keyword agent. Each
behavioural track prints clamped MCC with TP/FN/FP/TN; repositories print mean F2, the
vulnerable tasks' F2 on its own, and TP/FN/FP/TN where a vulnerable task counts as found
when any planted vulnerability is reported (F2 > 0) and a clean one as passed when
nothing is reported (F2 = 1). Each part ends with the benign false-positive rate: safe
behavioural tasks flagged (WARN or BLOCK), over all safe behavioural tasks.

`--part tuning` never loads the set-aside part, so the tuning loop cannot spend it;
`--verbose` lists per-task results on the tuning part only, for the same reason.

A package is bundled first (`assay agent bundle`), so what is scored is what is submitted.
The set-aside part is for measuring only: tuning detectors against it spends it.

Each agent is imported and `agent_main` called once per task, with a context shaped
like the sandbox's (probe inside a temporary workspace). A packed artifact (a sealed
sample, a registry's sdist) is unpacked by the safe extractors into a private
temporary directory first, as a round's snapshot does. `observed` is the validator's
real detonation (the bubblewrap sandbox) on the real corpus, and on the synthetic one
with `--detonate` (else None, the quick loop). Detonations are cached by artifact
digest (and the detonation code's digest) under out/reference-eval/observed/, so a
tuning loop detonates each artifact once, and again after detonation changes. The
agent itself is not sealed here: the real measurement is `assay eval`.
DNS is refused so the probe stays offline.
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

from assay.corpus.interface import Task, artifact_digest
from assay.corpus.native import NativeCorpus
from assay.corpus.packed import materialised
from assay.detonate import detonate
from assay.detonate.cache import detonation_code
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.metrics import Confusion
from assay.mechanism.scoring import RepResult, TaskTruth, TrackScore, score_track
from assay.mechanism.spec import TRACKS, Track
from assay.records import codec
from assay.records.observed import Observed
from assay.runner.bundle import bundle_package
from assay.runner.context import local_context
from assay.sandbox import default_backend
from assay.sandbox.interface import SandboxBackend
from assay.schema.mechanism_file import pinned

SPEC = pinned()

ROOT = Path(__file__).resolve().parents[1]
OBSERVED_CACHE = ROOT / "out" / "reference-eval" / "observed"
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


class Observer:
    """The validator's detonation of each behavioural artifact, cached on disk by digest
    (None when detonation is off: the quick loop)."""

    def __init__(self, backend: SandboxBackend | None) -> None:
        self.backend = backend

    def __call__(self, track: Track, artifact: Path) -> Observed | None:
        if self.backend is None or not track.behavioural:
            return None
        digest = artifact_digest(artifact)
        # Keyed by the detonation code too: a detonation changed since is not what is read.
        cached = OBSERVED_CACHE / detonation_code()[:16] / f"{digest}.json"
        if cached.is_file():
            return codec.decode(cached.read_bytes(), Observed)
        seed = bytes.fromhex(digest)[:16]  # the same canaries every time for one artifact
        observed = detonate(artifact, track, backend=self.backend, seed=seed).observed()
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(codec.encode(observed))
        return observed


def run_track(
    agent: Agent, track: Track, tasks: tuple[Task, ...], observe: Observer
) -> tuple[TrackScore, float]:
    scored = []
    slowest = 0.0
    for task in tasks:
        with (
            tempfile.TemporaryDirectory() as tmp,
            materialised(task.artifact_dir, task.archive) as artifact,
        ):
            observed = observe(track, artifact)
            started = time.perf_counter()
            report = agent(local_context(task.track, artifact, Path(tmp), observed=observed))
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


CORPORA = {
    "synthetic": {"tuning": "corpus", "set-aside": "corpus-eval"},
    "real": {"tuning": "corpus-real/tuning", "set-aside": "corpus-real/set-aside"},
}
PARTS = ("tuning", "set-aside")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "agents",
        nargs="*",
        type=Path,
        default=[ROOT / "agents/reference", ROOT / "agents/keyword.py"],
    )
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--corpus", choices=sorted(CORPORA), action="append")
    parser.add_argument("--part", choices=PARTS, action="append")
    parser.add_argument("--track", choices=[t.value for t in TRACKS], action="append")
    parser.add_argument("--detonate", action="store_true", help="detonate the synthetic corpus")
    parser.add_argument("--only", action="append", help="tasks whose id contains this")
    args = parser.parse_args(argv)
    tracks = [Track(t) for t in args.track] if args.track else TRACKS
    backend = default_backend()
    agents = [(path, load_agent(path)) for path in args.agents]
    socket.getaddrinfo = _refuse_dns  # type: ignore[assignment]
    for name in args.corpus or sorted(CORPORA, reverse=True):
        observe = Observer(backend if name == "real" or args.detonate else None)
        for path, agent in agents:
            print(f"== {path.name} on the {name} corpus")
            for part in args.part or PARTS:
                flagged = passed = 0  # safe behavioural tasks flagged, and allowed
                for track in tracks:
                    root = ROOT / CORPORA[name][part]
                    tasks = tuple(
                        t
                        for t in NativeCorpus(root).tasks(track)
                        if not args.only or any(o in t.task_id for o in args.only)
                    )
                    if not tasks:
                        continue
                    result, slowest = run_track(agent, track, tasks, observe)
                    _print_track(part, result, slowest, args.verbose and part == "tuning")
                    if result.confusion is not None:
                        flagged += result.confusion.fp
                        passed += result.confusion.tn
                if flagged + passed:
                    rate = flagged / (flagged + passed)
                    safe = flagged + passed
                    print(f"  benign false-positive rate, {part}: {flagged}/{safe} = {rate:.1%}")
    return 0


def _print_track(part: str, result: TrackScore, slowest: float, verbose: bool) -> None:
    print(f"  {result.track.value:13} {part:9} {len(result.tasks):3} tasks", end="  ")
    if result.track is Track.REPOSITORIES:
        vulnerable = [t.f2 or 0.0 for t in result.tasks if t.label == "malicious"]
        clean = [t.f2 or 0.0 for t in result.tasks if t.label != "malicious"]
        c = Confusion(
            tp=sum(f > 0 for f in vulnerable),
            fn=sum(f == 0 for f in vulnerable),
            fp=sum(f < 1 for f in clean),
            tn=sum(f == 1 for f in clean),
        )
        vulnerable_f2 = sum(vulnerable) / len(vulnerable) if vulnerable else 0.0
        print(
            f"mean F2 {result.f2:.3f}  vulnerable-task F2 {vulnerable_f2:.3f}  "
            f"chance-corrected score {result.score:.3f}  "
            f"tp {c.tp} tn {c.tn} fp {c.fp} fn {c.fn}  (slowest task {slowest:.3f}s)"
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
