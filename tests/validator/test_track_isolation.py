"""An infrastructure fault confined to one track abstains that track alone (issue 22).

The faults are real: a detonation whose interpreter is not installed, a snapshot a rep
cannot copy into its sandbox (a snapshot changed after planning:
tests/validator/test_round.py), an agent's inference proxy that cannot bind its socket.
The round's other
track is scored and weighed as if the faulted track were idle (its share split among
the others), the store records which track abstained and why, and `round resume` runs
that track again and ends exactly where an uninterrupted round ends.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay.detonate.cache import DetonationCache
from assay.detonate.observer import DetonationObserver
from assay.inference.interface import InferenceService
from assay.inference.proxy import MeteredProxy, ProxySession
from assay.mechanism.spec import InferenceBudget, Track
from assay.records.observed import Observed
from assay.records.plan import PlannedTask
from assay.records.round import RoundResult
from assay.report.registry import FORMATS, report_format
from assay.runner.probe import derive_nonce
from assay.sandbox import default_backend
from assay.schema.inference import InferenceConfig
from assay.store.sqlite import Store
from assay.validator.attesting import export_round
from assay.validator.config import RoundOverrides, round_config
from assay.validator.rounds import Round
from round_fixtures import REFERENCE_AGENTS, REFERENCE_SEED, StoredRound, reference_round_args

pytestmark = pytest.mark.sandbox

Assay = Callable[..., subprocess.CompletedProcess[str]]
SRC = Path(__file__).resolve().parents[2] / "src"


def scores_and_weights(payload: dict[str, Any]) -> str:
    return json.dumps({k: payload[k] for k in ("scores", "weights", "round_weights", "draw")})


def _payload(result: RoundResult) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(report_format("json").render(result))
    return payload


def _config(
    corpus: Path,
    db: Path,
    data: Path,
    tracks: tuple[Track, ...] = (Track.SKILLS, Track.REPOSITORIES),
    inference: InferenceConfig | None = None,
) -> RoundOverrides:
    return RoundOverrides(
        corpus=corpus,
        agents=REFERENCE_AGENTS,
        tracks=tracks,
        round_seed=REFERENCE_SEED,
        db=db,
        secret_file=data / "assay" / "validator.secret",
        inference=inference,
    )


# The reference round planned as `assay round run` plans it, then run with a detonation
# sandbox whose interpreter is not installed; run in its own process so the suite keeps
# to one sandbox backend per process.
BROKEN_DETONATION = """
import sys
from pathlib import Path

from assay.detonate.observer import DetonationObserver
from assay.inference.interface import InferenceService
from assay.inference.proxy import MeteredProxy, ProxySession
from assay.mechanism.spec import InferenceBudget, Track
from assay.report.registry import report_format
from assay.sandbox.bwrap import BwrapBackend
from assay.validator.attesting import export_round
from assay.validator.config import RoundOverrides, round_config
from assay.validator.rounds import Round

corpus, db, secret = map(Path, sys.argv[1:4])
agents = tuple(Path(a) for a in sys.argv[4:])
overrides = RoundOverrides(
    corpus=corpus, agents=agents, tracks=(Track.SKILLS, Track.REPOSITORIES),
    round_seed="{seed}", db=db, secret_file=secret,
)
started = Round.start(round_config(None, overrides))
missing = BwrapBackend(python="/nonexistent/python3", prestart=False)
started.engine.observer = DetonationObserver(missing)
sys.stdout.write(report_format("json").render(started.run()))
""".replace("{seed}", REFERENCE_SEED)


def test_a_detonation_that_cannot_start_abstains_its_track_and_a_resume_completes_it(
    assay: Assay, small_corpus: Path, tmp_path: Path, reference_round: StoredRound
) -> None:
    db = tmp_path / "faulted.db"
    secret = tmp_path / "data" / "assay" / "validator.secret"
    env = {**os.environ, "PYTHONPATH": str(SRC), "XDG_DATA_HOME": str(tmp_path / "data")}
    args = [BROKEN_DETONATION, str(small_corpus), str(db), str(secret)]
    ran = subprocess.run(
        [sys.executable, "-c", *args, *(str(a) for a in REFERENCE_AGENTS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    faulted = json.loads(ran.stdout)

    # Skills abstained, with the reason; repositories scored and weighed alone.
    assert faulted["status"] == "completed"
    assert list(faulted["abstained_tracks"]) == ["skills"]
    reason = faulted["abstained_tracks"]["skills"]
    assert "InfrastructureError" in reason and "/nonexistent/python3" in reason, reason
    assert list(faulted["scores"]) == ["repositories"]
    with Store(db, create=False) as store:
        assert list(store.abstained_tracks(faulted["round_id"])) == ["skills"]
        assert not any(o.track is Track.SKILLS for o in store.outcomes(faulted["round_id"]))

    # The idle-share rule: the same weights as a round of repositories alone.
    alone_args = reference_round_args(small_corpus, tmp_path / "alone.db", "--json")
    alone_args[alone_args.index("skills,repositories")] = "repositories"
    alone = json.loads(assay(*alone_args).stdout)
    assert faulted["round_weights"] == alone["round_weights"]
    assert faulted["scores"] == alone["scores"]

    listed = json.loads(assay("round", "list", "--db", str(db), "--json").stdout)
    assert listed[0]["abstained_tracks"] == ["skills"]

    # A resume (now with a working detonation) runs skills and ends as an uninterrupted round.
    resumed = json.loads(assay("round", "resume", "--db", str(db), "--json").stdout)
    assert resumed["status"] == "completed" and resumed["abstained_tracks"] == {}
    assert scores_and_weights(resumed) == scores_and_weights(reference_round.payload)
    again = assay("round", "resume", "--db", str(db), check=False)
    assert again.returncode != 0 and "no unfinished round" in again.stderr


class _SnapshotTurnedToFifo:
    """The round's own detonation observer (reading the day's detonations, as a round's
    does); once the skills tasks are detonated (after the snapshots were verified), one
    repositories snapshot file becomes a fifo, which no sandbox can copy in: every
    repositories rep that starts faults in its own sandbox."""

    def __init__(self, victim: Path) -> None:
        self.real = DetonationObserver(default_backend(), DetonationCache.configured())
        self.victim = victim
        self.original = victim.read_bytes()
        self.mode = victim.stat().st_mode & 0o7777

    def __call__(self, task: PlannedTask) -> Observed | None:
        observed = self.real(task)
        if self.victim.is_file():
            self.victim.unlink()
            os.mkfifo(self.victim)
        return observed

    def restore(self) -> None:
        self.victim.unlink()
        self.victim.write_bytes(self.original)
        self.victim.chmod(self.mode)


def test_a_rep_whose_sandbox_faults_abstains_its_track_only(
    small_corpus: Path, tmp_path: Path, reference_round: StoredRound
) -> None:
    data = tmp_path / "data"
    overrides = _config(small_corpus, tmp_path / "rep.db", data)
    started = Round.start(round_config(None, overrides))
    planned = started.engine.plan.tasks
    repository = next(t for t in planned if t.track is Track.REPOSITORIES)
    victim = next(p for p in sorted(Path(repository.artifact_dir).rglob("*")) if p.is_file())
    hostile = _SnapshotTurnedToFifo(victim)
    started.engine.observer = hostile
    faulted = started.run()

    assert faulted.status == "completed"
    assert list(faulted.abstained_tracks) == ["repositories"]
    assert "not a regular file" in faulted.abstained_tracks["repositories"]
    assert faulted.card is not None and list(faulted.card.scores) == ["skills"]
    assert not any(r.track is Track.REPOSITORIES for r in faulted.records)
    # Every report format says which track abstained, and why.
    for name in FORMATS:
        assert "not a regular file" in report_format(name).render(faulted), name
    # Attested: the skills tasks alone.
    key = Ed25519PrivateKey.generate()
    export = export_round(overrides.db, faulted.round_id, tmp_path / "sssa", key)
    assert export.written and all(p.name.startswith("skills.") for p in export.written)

    hostile.restore()
    resumed = Round.resume(db=overrides.db, secret_file=overrides.secret_file).run()
    assert resumed.status == "completed" and resumed.abstained_tracks == {}
    assert scores_and_weights(_payload(resumed)) == scores_and_weights(reference_round.payload)


class _SocketPathTaken(ProxySession):
    """A real session whose socket path is already taken (a file left there) when it
    starts, so binding it fails: the validator's fault, before the agent runs."""

    def listen(self, path: Path) -> None:
        path.touch()
        super().listen(path)


@dataclass(frozen=True)
class _OneSessionCannotStart(MeteredProxy):
    """The round's real proxy, except for the session of the rep with this nonce."""

    nonce: str = ""

    def session(self, *, nonce: str, model: str | None, budget: InferenceBudget) -> ProxySession:
        session = super().session(nonce=nonce, model=model, budget=budget)
        if nonce != self.nonce:
            return session
        return _SocketPathTaken(
            self.upstream, nonce=nonce, model=session.model, budget=session.budget
        )


# The round's model. The reference agents never ask it, so no server need answer; each
# rep still gets its own proxy session, served into its sandbox.
UNASKED_MODEL = InferenceConfig(base_url="http://127.0.0.1:9/v1", model="unasked-model")


def test_an_agents_inference_session_that_cannot_start_abstains_its_track_only(
    small_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    overrides = _config(small_corpus, tmp_path / "faulted.db", data, inference=UNASKED_MODEL)
    started = Round.start(round_config(None, overrides))
    engine, plan = started.engine, started.engine.plan
    # One agent's session on one skills task, in its first rep.
    skills_task = next(t for t in plan.tasks if t.track is Track.SKILLS)
    nonce = derive_nonce(engine.secret, plan.round_seed, plan.agents[0], skills_task.task_id, 0)
    served = engine._inference()
    assert isinstance(served, MeteredProxy)
    faulty: InferenceService = _OneSessionCannotStart(served.upstream, nonce)
    monkeypatch.setattr(engine, "_inference", lambda: faulty)
    faulted = _payload(started.run())

    assert faulted["status"] == "completed"
    assert list(faulted["abstained_tracks"]) == ["skills"]
    reason = faulted["abstained_tracks"]["skills"]
    assert "cannot start the inference proxy" in reason and skills_task.task_id in reason
    assert list(faulted["scores"]) == ["repositories"]

    # Repositories scored and weighed exactly as in a round of repositories alone.
    alone_config = _config(
        small_corpus, tmp_path / "alone.db", data, (Track.REPOSITORIES,), UNASKED_MODEL
    )
    alone = _payload(Round.start(round_config(None, alone_config)).run())
    assert alone["abstained_tracks"] == {} and list(alone["scores"]) == ["repositories"]
    keys = ("scores", "weights", "round_weights")
    assert json.dumps({k: faulted[k] for k in keys}) == json.dumps({k: alone[k] for k in keys})


def test_a_store_from_before_track_abstentions_reads_and_migrates(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    Store(db).close()
    with sqlite3.connect(db) as con:  # the store as schema 1 left it
        con.execute("DROP TABLE track_abstentions")
        con.execute("UPDATE schema_version SET version = 1")
    with Store(db, read_only=True) as store:
        assert store.abstained_tracks("round-0001") == {} and store.summaries() == []
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT version FROM schema_version").fetchone() == (1,)
    Store(db).close()  # opened to write: migrated
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT version FROM schema_version").fetchone() == (2,)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    assert "track_abstentions" in tables
