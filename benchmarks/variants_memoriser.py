"""A memorising agent against per-round variants, and the reference agent beside it.

The memoriser (tests/agents/memoriser.py) carries a table from the content digest of
every file of every public corpus (corpus/, corpus-eval/, corpus-real/) to its task's
label, findings and planted lines. The bundled corpus is planned twice with the same
seed, as a round plans it (`make_plan`, every task drawn): once as it is, once with
variants (a fixed secret). Both agents answer every task in-process, and each track is
scored with the mechanism's own function; printed per track, side by side: each one's
score, the memoriser's eligibility (the track's threshold, and strictly above what
reporting nothing scores), the reference agent's change, and the share of the shown
files whose digest the table holds.

Usage: python benchmarks/variants_memoriser.py [--corpus DIR] [--track TRACK ...]
           [--detonate] [--seed HEX] [--tasks N]

`observed` is None unless `--detonate`: then each artifact, original and variant, is
detonated in the bubblewrap sandbox first (slow: run it under the shared lock), so the
reference agent sees what a round would show it. The agents themselves are not sealed
here; a sealed round over the repositories track is tests/validator/test_variants_memoriser.py.
"""

from __future__ import annotations

import argparse
import hashlib
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from assay.corpus.native import NativeCorpus
from assay.detonate import detonate
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.scoring import RepResult, TaskTruth, TrackScore, score_track
from assay.mechanism.spec import TRACKS, Track
from assay.mechanism.weights import eligible
from assay.records.agent import Agent as AgentCode
from assay.records.observed import Observed
from assay.records.plan import PlannedTask, RoundPlan
from assay.runner.bundle import bundle_package
from assay.runner.context import local_context
from assay.sandbox import default_backend
from assay.schema.mechanism_file import pinned
from assay.validator.planning import make_plan

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "agents"))
from memoriser import PUBLIC_CORPORA, memorised_table, write_memoriser  # noqa: E402

SPEC = pinned()
SECRET = hashlib.sha256(b"variants benchmark secret").digest()
Agent = Callable[[dict[str, Any]], dict[str, Any]]


def load_agent(code: bytes, name: str) -> Agent:
    module = ModuleType(f"agent_{name}")
    exec(compile(code, name, "exec"), module.__dict__)
    main: Agent = module.agent_main
    return main


def plan(
    corpus: Path, tracks: list[Track], seed: str, out: Path, varied: bool, cap: int | None
) -> RoundPlan:
    return make_plan(
        corpus=NativeCorpus(corpus),
        agents=[AgentCode(b"def agent_main(context):\n    return {}\n")],
        tracks=tracks,
        round_seed=seed,
        validator_id="benchmark",
        spec=SPEC,
        snapshots=out,
        draw_all=True,
        tasks_cap=cap,
        variant_secret=SECRET if varied else None,
    )


def score(agent: Agent, track: Track, tasks: list[PlannedTask], observed: Observer) -> TrackScore:
    scored = []
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            artifact = Path(task.artifact_dir)
            context = local_context(track, artifact, Path(tmp), observed=observed(task))
            report = agent(context)
        rep = RepResult(
            completed=True,
            verdict=report["verdict"]["decision"],
            findings=tuple(map(FindingItem.of, report.get("findings", []))),
            vulnerabilities=tuple(
                map(VulnerabilityItem.of, report.get("evidence", {}).get("vulnerabilities") or [])
            ),
        )
        truth = TaskTruth(task.task_id, task.label, task.expected_findings, task.planted)
        scored.append((truth, [rep]))
    return score_track(track, scored, spec=SPEC)


class Observer:
    """Each behavioural artifact's detonation, once per digest (None when off)."""

    def __init__(self, on: bool) -> None:
        self.backend = default_backend() if on else None
        self.seen: dict[str, Observed] = {}

    def __call__(self, task: PlannedTask) -> Observed | None:
        if self.backend is None or not task.track.behavioural:
            return None
        if task.artifact_digest not in self.seen:
            seed = bytes.fromhex(task.artifact_digest)[:16]
            self.seen[task.artifact_digest] = detonate(
                Path(task.artifact_dir), task.track, backend=self.backend, seed=seed
            ).observed()
        return self.seen[task.artifact_digest]


def known_share(tasks: list[PlannedTask], table: set[str]) -> tuple[int, int]:
    """(files whose content digest the memoriser's table holds, files shown)."""
    known = shown = 0
    for task in tasks:
        for path in Path(task.artifact_dir).rglob("*"):
            if path.is_file() and not path.is_symlink():
                shown += 1
                known += hashlib.sha256(path.read_bytes()).hexdigest()[:20] in table
    return known, shown


HEADER = (
    f"{'track':13} {'tasks':>5}  {'memoriser plain':>15} {'varied':>7}  "
    f"{'reference plain':>15} {'varied':>7} {'delta':>7}  {'files known plain':>17} {'varied':>9}"
)


def _row(
    track: Track,
    tasks: int,
    memorised: list[TrackScore],
    referenced: list[TrackScore],
    known: list[tuple[int, int]],
) -> str:
    threshold = SPEC.track(track).threshold
    paid = ["*" if eligible(s.score, threshold, s.floor) else " " for s in memorised]
    plain, varied = referenced
    files = [f"{k}/{n}" for k, n in known]
    return (
        f"{track.value:13} {tasks:5}  {memorised[0].score:14.3f}{paid[0]} "
        f"{memorised[1].score:6.3f}{paid[1]}  {plain.score:15.3f} {varied.score:7.3f} "
        f"{varied.score - plain.score:+7.3f}  {files[0]:>17} {files[1]:>9}"
    )


def _refuse_dns(*args: object, **kwargs: object) -> list[Any]:
    raise OSError("no network in the in-process evaluation")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus")
    parser.add_argument("--track", choices=[t.value for t in TRACKS], action="append")
    parser.add_argument("--detonate", action="store_true")
    parser.add_argument("--seed", default="5eed")
    parser.add_argument("--tasks", type=int, help="at most this many tasks per track (seeded)")
    args = parser.parse_args(argv)
    tracks = [Track(t) for t in args.track] if args.track else list(TRACKS)
    with tempfile.TemporaryDirectory(prefix="variants-bench-") as tmp:
        public = memorised_table([ROOT / c for c in PUBLIC_CORPORA])
        table = set(public["digests"])
        memoriser_file = write_memoriser(public, Path(tmp) / "memoriser.py")
        memoriser = load_agent(memoriser_file.read_bytes(), "memoriser")
        limit = SPEC.sandbox.agent_code_bytes
        reference = load_agent(
            bundle_package(ROOT / "agents/reference", max_bytes=limit).code, "ref"
        )
        socket.getaddrinfo = _refuse_dns
        plans = {
            v: plan(args.corpus, tracks, args.seed, Path(tmp) / str(v), v, args.tasks)
            for v in (False, True)
        }
        observe = Observer(args.detonate)
        detonation = "on" if args.detonate else "off"
        print(f"corpus {args.corpus.name}, seed {args.seed}, detonation {detonation}")
        print(HEADER)
        for track in tracks:
            rows = {v: [t for t in p.tasks if t.track is track] for v, p in plans.items()}
            memorised = [score(memoriser, track, rows[v], observe) for v in (False, True)]
            referenced = [score(reference, track, rows[v], observe) for v in (False, True)]
            known = [known_share(rows[v], table) for v in (False, True)]
            print(_row(track, len(rows[False]), memorised, referenced, known))
        print("* eligible: at or above the track's threshold and strictly above reporting nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
