"""`eval` and `demo`: whole rounds with fixed seeds, for an author and for a first look.

Both are ordinary rounds (the validator's exact metric, the real sandbox); the
front end decides how a round is driven (`Drive`: progress, interruption).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from assay.attest.sssa import Export, verify_file
from assay.mechanism.spec import Track
from assay.records.round import RoundResult
from assay.validator.attesting import export_round
from assay.validator.config import RoundOverrides, round_config
from assay.validator.rounds import Notify, Round, quiet

# Fixed seeds: the same agent and corpus give the same eval and demo every time.
EVAL_SEED = "e7a1"
DEMO_SEED = "de70"

Drive = Callable[[Round], RoundResult]


def _run(round_: Round) -> RoundResult:
    return round_.run()


def evaluate(
    agent: Path,
    track: Track,
    *,
    corpus: Path | None = None,
    reps: int | None = None,
    tasks_cap: int | None = None,
    jobs: int | None = None,
    config_file: Path | None = None,
    drive: Drive = _run,
    notify: Notify = quiet,
) -> RoundResult:
    """One agent on every task of one track (at most `tasks_cap`, a seeded subset), in a
    throwaway store."""
    with tempfile.TemporaryDirectory(prefix="assay-eval-") as tmp:
        overrides = RoundOverrides(
            corpus=corpus,
            agents=(agent,),
            tracks=(track,),
            db=Path(tmp) / "eval.db",
            jobs=jobs,
            round_seed=EVAL_SEED,
        )
        config = round_config(config_file, overrides)
        started = Round.start(config, reps=reps, draw_all=True, tasks_cap=tasks_cap, notify=notify)
        return replace(drive(started), kind="eval")


@dataclass(frozen=True)
class DemoResult:
    result: RoundResult
    export: Export | None  # the round's SSSAs, each verified; None when it did not complete
    sssa_dir: Path | None


def demo(
    db: Path,
    *,
    corpus: Path | None = None,
    agents: tuple[Path, ...] = (),
    jobs: int | None = None,
    drive: Drive = _run,
    notify: Notify = quiet,
) -> DemoResult:
    """The bundled agents (or `agents`) over the whole corpus, then one SSSA per agent × task,
    each signed and verified offline as a consumer would (`SssaError` names a failure)."""
    overrides = RoundOverrides(db=db, jobs=jobs, round_seed=DEMO_SEED, corpus=corpus, agents=agents)
    config = round_config(None, overrides)
    result = drive(Round.start(config, draw_all=True, notify=notify))
    if result.status != "completed":
        return DemoResult(result, None, None)
    out = db.parent / "sssa" / result.round_id
    export = export_round(db, result.round_id, out)
    for path in export.written:
        verify_file(path)
    return DemoResult(result, export, out)
