"""The round store: one SQLite file, written before anything is scored.

Every rep outcome is committed in its own transaction (WAL), so a validator
killed at any moment loses at most the reps in flight, and `round resume`
runs exactly the reps that have no row. A track the validator abstained on
(an infrastructure fault confined to it) has a row in `track_abstentions`: the
round's other tracks are scored and weighed without it, and a resume runs it
again. Scores are always recomputed from the rows (`assay score --db`), never
kept as the only copy.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec

from assay.records import codec
from assay.records.agent import Agent
from assay.records.chain import HotkeyWeight, WeightReceipt
from assay.records.observed import Observed
from assay.records.outcome import RunOutcome
from assay.records.plan import RoundPlan
from assay.records.scorecard import Scorecard

# 2: `track_abstentions` (an older assay would read such a round as whole).
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id TEXT NOT NULL UNIQUE,
    plan_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'abstained')),
    reason TEXT,
    result_json TEXT,
    weights_json TEXT
);
CREATE TABLE IF NOT EXISTS agents (
    round_id TEXT NOT NULL REFERENCES rounds(round_id),
    agent_hash TEXT NOT NULL,
    name TEXT NOT NULL,
    entrypoint TEXT NOT NULL,
    code BLOB NOT NULL,
    PRIMARY KEY (round_id, agent_hash)
);
CREATE TABLE IF NOT EXISTS observed (
    round_id TEXT NOT NULL REFERENCES rounds(round_id),
    track TEXT NOT NULL,
    task_id TEXT NOT NULL,
    observed_json TEXT NOT NULL,
    PRIMARY KEY (round_id, track, task_id)
);
CREATE TABLE IF NOT EXISTS reps (
    round_id TEXT NOT NULL REFERENCES rounds(round_id),
    agent_hash TEXT NOT NULL,
    track TEXT NOT NULL,
    task_id TEXT NOT NULL,
    rep INTEGER NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    wall_s REAL NOT NULL,
    outcome_json TEXT NOT NULL,
    PRIMARY KEY (round_id, agent_hash, track, task_id, rep)
);
CREATE TABLE IF NOT EXISTS hotkey_weights (
    round_id TEXT NOT NULL REFERENCES rounds(round_id),
    netuid INTEGER NOT NULL,
    hotkey TEXT NOT NULL,
    track TEXT NOT NULL,
    uid INTEGER NOT NULL,
    weight REAL NOT NULL,
    PRIMARY KEY (round_id, netuid, hotkey, track)
);
-- The block each hotkey of a set registered at its UID: a new block is a new owner of
-- the UID (deregistered and registered again), whose weight history starts afresh.
CREATE TABLE IF NOT EXISTS hotkey_registrations (
    round_id TEXT NOT NULL REFERENCES rounds(round_id),
    netuid INTEGER NOT NULL,
    hotkey TEXT NOT NULL,
    registered_at INTEGER NOT NULL,
    PRIMARY KEY (round_id, netuid, hotkey)
);
CREATE TABLE IF NOT EXISTS chain_receipts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    round_id TEXT NOT NULL REFERENCES rounds(round_id),
    netuid INTEGER NOT NULL,
    success INTEGER NOT NULL,
    receipt_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS track_abstentions (
    round_id TEXT NOT NULL REFERENCES rounds(round_id),
    track TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (round_id, track)
);
CREATE TABLE IF NOT EXISTS inference_bodies (
    sha256 TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
-- Admission by first arrival, kept across restarts (attest/intake.py): when an owner's
-- code was first seen (seq is the order), and which owner first carried each
-- normalised form screening admitted. Tables an older assay ignores.
CREATE TABLE IF NOT EXISTS code_arrivals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    owner TEXT NOT NULL,
    code_sha256 TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    UNIQUE (owner, code_sha256)
);
CREATE TABLE IF NOT EXISTS screening_fingerprints (
    digest TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    arrival INTEGER NOT NULL,
    first_seen TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS intake_accepted (
    hotkey TEXT NOT NULL,
    track TEXT NOT NULL,
    accepted_at REAL NOT NULL,
    PRIMARY KEY (hotkey, track)
);
"""


class StoreError(RuntimeError):
    """The store cannot be used (unwritable, newer schema, unknown round): abstain."""


@dataclass(frozen=True)
class StoredRound:
    round_id: str
    seq: int
    plan: RoundPlan
    status: str
    reason: str | None
    weights: dict[str, float] | None


@dataclass(frozen=True)
class RoundSummary:
    """One line of `assay round list`."""

    round_id: str
    status: str
    reason: str | None
    round_seed: str
    tracks: tuple[str, ...]
    agents: int
    reps_stored: int
    weights: dict[str, float] | None
    abstained_tracks: tuple[str, ...] = ()  # tracks the validator abstained on


class Store:
    """A round store on one SQLite file, created when missing unless `create` is False
    (read-only commands never leave an empty store behind).

    `read_only` opens it for reading alone (listing, reports, the viewer): nothing is
    written, not even the schema, so a store on a read-only mount can be read."""

    def __init__(self, path: Path, *, create: bool = True, read_only: bool = False) -> None:
        self.path = path
        if (read_only or not create) and not path.is_file():
            raise StoreError(f"no round store at {path} (run a round first, or pass --db)")
        self._scratch = ExitStack()
        if read_only:
            self._db = _open_read_only(path, self._scratch)
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"store {path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()
        self._scratch.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path}: {exc}") from exc

    def _migrate(self) -> None:
        with self._transaction() as db:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)
            row = db.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            _check_schema(db, self.path)
            if row is not None and row[0] < SCHEMA_VERSION:  # later tables are made above
                db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    # rounds -----------------------------------------------------------------

    def next_round_id(self) -> str:
        row = self._db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM rounds").fetchone()
        return f"round-{row[0]:04d}"

    def create_round(self, round_id: str, plan: RoundPlan, agents: Sequence[Agent]) -> None:
        """The plan and the pinned agent code, in one transaction: a round exists whole or not."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO rounds (round_id, plan_json, status) VALUES (?, ?, 'running')",
                (round_id, json.dumps(plan.to_json(), sort_keys=True)),
            )
            db.executemany(
                "INSERT INTO agents VALUES (?, ?, ?, ?, ?)",
                [(round_id, a.agent_hash, a.name, a.entrypoint, a.code) for a in agents],
            )

    def round(self, round_id: str) -> StoredRound:
        row = self._db.execute(
            "SELECT round_id, seq, plan_json, status, reason, weights_json "
            "FROM rounds WHERE round_id = ?",
            (round_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"store {self.path} has no round {round_id!r}")
        stored = _stored_round(row)
        return replace(stored, status=self._live_status(round_id, stored.status))

    def summaries(self) -> list[RoundSummary]:
        """Every round, oldest first, without loading any rep."""
        rows = self._db.execute(
            "SELECT r.round_id, r.status, r.reason, r.plan_json, r.weights_json, "
            "(SELECT COUNT(*) FROM agents a WHERE a.round_id = r.round_id), "
            "(SELECT COUNT(*) FROM reps p WHERE p.round_id = r.round_id), "
            "(SELECT GROUP_CONCAT(t.track, ',') FROM track_abstentions t "
            "WHERE t.round_id = r.round_id) "
            "FROM rounds r ORDER BY r.seq"
        ).fetchall()
        out = []
        for round_id, status, reason, plan_json, weights_json, agents, reps, abstained in rows:
            plan = json.loads(plan_json)
            out.append(
                RoundSummary(
                    round_id=round_id,
                    status=self._live_status(round_id, status),
                    reason=reason,
                    round_seed=str(plan.get("round_seed", "")),
                    tracks=tuple(sorted(plan.get("reps", {}))),
                    agents=int(agents),
                    reps_stored=int(reps),
                    weights=json.loads(weights_json) if weights_json else None,
                    abstained_tracks=tuple(sorted(abstained.split(","))) if abstained else (),
                )
            )
        return out

    # a running round's process ----------------------------------------------------

    def _lock_path(self, round_id: str) -> Path:
        return self.path.with_name(f"{self.path.name}.running") / f"{round_id}.lock"

    @contextmanager
    def running(self, round_id: str) -> Iterator[None]:
        """Held while this process runs the round: an exclusive lock on a file beside the
        store, which the kernel releases when the process ends however it ends, so a
        reader can tell a running round from one whose process is gone."""
        lock = self._lock_path(round_id)
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            lock.unlink(missing_ok=True)
            os.close(fd)

    def _live_status(self, round_id: str, status: str) -> str:
        """`running` only while a process holds the round (`running`); else `interrupted`."""
        if status != "running":
            return status
        try:
            fd = os.open(self._lock_path(round_id), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return "interrupted"  # no process ever held it, or it finished and let go
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return "running"
        finally:
            os.close(fd)
        return "interrupted"

    def weight_history(self) -> tuple[tuple[str, dict[str, float]], ...]:
        """(round id, written weights) of every completed round, oldest first."""
        rows = self._db.execute(
            "SELECT round_id, weights_json FROM rounds WHERE status = 'completed' "
            "AND weights_json IS NOT NULL ORDER BY seq"
        ).fetchall()
        return tuple((str(r), dict(json.loads(w))) for r, w in rows)

    def scorecard(self, round_id: str) -> Scorecard | None:
        """The scores written when the round finished (None before it did): what its
        weights were computed from, read without rescoring its reps."""
        row = self._db.execute(
            "SELECT result_json FROM rounds WHERE round_id = ?", (round_id,)
        ).fetchone()
        if row is None or row[0] is None:
            return None
        try:
            return codec.convert(json.loads(row[0])["scores"], Scorecard)
        except (ValueError, KeyError, codec.DecodeError) as exc:
            raise StoreError(f"round {round_id}: its stored scores are unreadable ({exc})") from exc

    def agent_rounds(self, agent_hash: str) -> list[tuple[str, str]]:
        """(round id, name pinned) of every round the agent was in, oldest first."""
        rows = self._db.execute(
            "SELECT a.round_id, a.name FROM agents a JOIN rounds r USING (round_id) "
            "WHERE a.agent_hash = ? ORDER BY r.seq",
            (agent_hash,),
        ).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def latest_unfinished(self) -> str | None:
        """The latest round still running, or completed without a track it abstained on."""
        row = self._db.execute(
            "SELECT round_id FROM rounds r WHERE status = 'running' OR EXISTS "
            "(SELECT 1 FROM track_abstentions t WHERE t.round_id = r.round_id) "
            "ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        return None if row is None else str(row[0])

    def previous_weights(self, before_seq: int) -> dict[str, float]:
        """The last vector written before a round: what its EMA blends with."""
        row = self._db.execute(
            "SELECT weights_json FROM rounds WHERE status = 'completed' AND seq < ? "
            "AND weights_json IS NOT NULL ORDER BY seq DESC LIMIT 1",
            (before_seq,),
        ).fetchone()
        return {} if row is None else dict(json.loads(row[0]))

    def finish(self, round_id: str, card: Scorecard, weights: dict[str, float]) -> None:
        """The round's scores and its written (EMA-blended) weights."""
        result = {"scores": card.to_json_dict(), "round_weights": card.weights}
        with self._transaction() as db:
            db.execute(
                "UPDATE rounds SET status = 'completed', reason = NULL, result_json = ?, "
                "weights_json = ? WHERE round_id = ?",
                (json.dumps(result, sort_keys=True), json.dumps(weights, sort_keys=True), round_id),
            )

    def round_weights(self, round_id: str) -> dict[str, float]:
        """The round's own weights per agent, before any EMA (empty until it completes)."""
        row = self._db.execute(
            "SELECT result_json FROM rounds WHERE round_id = ?", (round_id,)
        ).fetchone()
        if row is None or row[0] is None:
            return {}
        return dict(json.loads(row[0]).get("round_weights", {}))

    def round_scores(self, round_id: str) -> dict[str, dict[str, float]]:
        """The round's scores per track and agent (empty until it completes)."""
        row = self._db.execute(
            "SELECT result_json FROM rounds WHERE round_id = ?", (round_id,)
        ).fetchone()
        if row is None or row[0] is None:
            return {}
        scores = json.loads(row[0]).get("scores", {}).get("scores", {})
        return {
            t: {a: float(v["score"]) for a, v in agents.items()} for t, agents in scores.items()
        }

    # arrivals -----------------------------------------------------------------

    def arrival(self, owner: str, code_sha256: str, seen_at: str) -> int:
        """The order in which `owner`'s code was first seen, recorded at `seen_at` if new."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO code_arrivals (owner, code_sha256, first_seen) "
                "VALUES (?, ?, ?)",
                (owner, code_sha256, seen_at),
            )
            row = db.execute(
                "SELECT seq FROM code_arrivals WHERE owner = ? AND code_sha256 = ?",
                (owner, code_sha256),
            ).fetchone()
        return int(row[0])

    def claim_fingerprint(self, digest: str, owner: str, arrival: int, seen_at: str) -> str:
        """The owner of a normalised form: the earliest arrival that ever carried it."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO screening_fingerprints VALUES (?, ?, ?, ?) "
                "ON CONFLICT (digest) DO UPDATE SET owner = excluded.owner, "
                "arrival = excluded.arrival, first_seen = excluded.first_seen "
                "WHERE excluded.arrival < screening_fingerprints.arrival",
                (digest, owner, arrival, seen_at),
            )
            row = db.execute(
                "SELECT owner FROM screening_fingerprints WHERE digest = ?", (digest,)
            ).fetchone()
        return str(row[0])

    # the subnet ---------------------------------------------------------------

    def put_chain_weights(
        self, round_id: str, netuid: int, rows: Sequence[HotkeyWeight], receipt: WeightReceipt
    ) -> None:
        """A set's receipt, and on success the per-hotkey EMA it was made from, at once."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO chain_receipts (round_id, netuid, success, receipt_json) "
                "VALUES (?, ?, ?, ?)",
                (round_id, netuid, int(receipt.success), codec.encode(receipt).decode()),
            )
            if not receipt.success:
                return
            db.execute(
                "DELETE FROM hotkey_weights WHERE round_id = ? AND netuid = ?", (round_id, netuid)
            )
            db.executemany(
                "INSERT INTO hotkey_weights VALUES (?, ?, ?, ?, ?, ?)",
                [(round_id, netuid, r.hotkey, r.track, r.uid, r.weight) for r in rows],
            )
            db.execute(
                "DELETE FROM hotkey_registrations WHERE round_id = ? AND netuid = ?",
                (round_id, netuid),
            )
            db.executemany(
                "INSERT INTO hotkey_registrations VALUES (?, ?, ?, ?)",
                sorted({(round_id, netuid, r.hotkey, r.registered_at) for r in rows}),
            )

    def receipts(self, round_id: str, netuid: int) -> list[WeightReceipt]:
        """Every answer the chain gave for a round's weights, oldest first."""
        rows = self._db.execute(
            "SELECT receipt_json FROM chain_receipts WHERE round_id = ? AND netuid = ? ORDER BY id",
            (round_id, netuid),
        ).fetchall()
        return [codec.decode(r[0], WeightReceipt) for r in rows]

    def previous_hotkey_weights(self, netuid: int, before_seq: int) -> list[HotkeyWeight]:
        """The per-hotkey EMA of the last round set on `netuid` before a round."""
        rows = self._db.execute(
            "SELECT h.hotkey, h.track, h.uid, h.weight, COALESCE(g.registered_at, 0) "
            "FROM hotkey_weights h JOIN rounds r ON r.round_id = h.round_id "
            "LEFT JOIN hotkey_registrations g ON g.round_id = h.round_id "
            "AND g.netuid = h.netuid AND g.hotkey = h.hotkey WHERE h.netuid = ? AND r.seq = "
            "(SELECT MAX(r2.seq) FROM hotkey_weights h2 JOIN rounds r2 "
            "ON r2.round_id = h2.round_id WHERE h2.netuid = ? AND r2.seq < ?) "
            "ORDER BY h.hotkey, h.track",
            (netuid, netuid, before_seq),
        ).fetchall()
        return [
            HotkeyWeight(hotkey=h, track=t, uid=int(u), weight=float(w), registered_at=int(b))
            for h, t, u, w, b in rows
        ]

    def abstain(self, round_id: str, reason: str) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE rounds SET status = 'abstained', reason = ?, weights_json = NULL "
                "WHERE round_id = ?",
                (reason, round_id),
            )

    def reopen(self, round_id: str) -> None:
        """Running again: the tracks it abstained on are tried again with the rest."""
        with self._transaction() as db:
            db.execute(
                "UPDATE rounds SET status = 'running', reason = NULL WHERE round_id = ?",
                (round_id,),
            )
            db.execute("DELETE FROM track_abstentions WHERE round_id = ?", (round_id,))

    def abstain_track(self, round_id: str, track: str, reason: str) -> None:
        """The validator abstains on one track of the round; the first reason stands."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO track_abstentions VALUES (?, ?, ?)",
                (round_id, track, reason),
            )

    def abstained_tracks(self, round_id: str) -> dict[str, str]:
        """Track -> why the validator abstained on it, in track order."""
        rows = self._db.execute(
            "SELECT track, reason FROM track_abstentions WHERE round_id = ? ORDER BY track",
            (round_id,),
        ).fetchall()
        return {str(track): str(reason) for track, reason in rows}

    # the miners' intake ------------------------------------------------------

    def last_accepted(self, hotkey: str, track: str) -> float | None:
        """When the intake last accepted a new version of `hotkey` for `track` (Unix s)."""
        row = self._db.execute(
            "SELECT accepted_at FROM intake_accepted WHERE hotkey = ? AND track = ?",
            (hotkey, track),
        ).fetchone()
        return None if row is None else float(row[0])

    def record_accepted(self, hotkey: str, track: str, at: float) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO intake_accepted VALUES (?, ?, ?) ON CONFLICT (hotkey, track) "
                "DO UPDATE SET accepted_at = excluded.accepted_at",
                (hotkey, track, at),
            )

    # agents, observations, reps ----------------------------------------------

    def agents(self, round_id: str) -> list[Agent]:
        rows = self._db.execute(
            "SELECT agent_hash, name, entrypoint, code FROM agents WHERE round_id = ? "
            "ORDER BY agent_hash",
            (round_id,),
        ).fetchall()
        return [Agent(bytes(r[3]), r[2], r[1]) for r in rows]

    def put_observed(self, round_id: str, track: str, task_id: str, observed: Observed) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO observed VALUES (?, ?, ?, ?)",
                (round_id, track, task_id, codec.encode(observed).decode()),
            )

    def observed(self, round_id: str) -> dict[tuple[str, str], Observed]:
        """Each detonated task's observation. A row that is not one was written by
        something other than this validator: the store is not to be trusted."""
        rows = self._db.execute(
            "SELECT track, task_id, observed_json FROM observed WHERE round_id = ?", (round_id,)
        ).fetchall()
        out: dict[tuple[str, str], Observed] = {}
        for track, task_id, text in rows:
            try:
                out[(track, task_id)] = codec.decode(text, Observed)
            except codec.DecodeError as exc:
                raise StoreError(
                    f"stored observation of {track}/{task_id} in round {round_id} is "
                    f"unreadable ({exc})"
                ) from exc
        return out

    def put_rep(self, round_id: str, outcome: RunOutcome) -> None:
        """Commit one rep. A second write of the same rep is refused: none runs twice.

        The bodies of its inference exchanges go to their own table, once per digest
        (reps often send the same prompt), so reading outcomes to score stays light."""
        with self._transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO inference_bodies VALUES (?, ?)",
                [(body.sha256, body.text) for body in outcome.transcript],
            )
            db.execute(
                "INSERT INTO reps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    round_id,
                    outcome.agent_hash,
                    outcome.track.value,
                    outcome.task_id,
                    outcome.rep,
                    outcome.status.value,
                    outcome.reason.value if outcome.reason else None,
                    outcome.charged_wall_s,  # summed by `wall_spent`, the round cap's meter
                    msgspec.structs.replace(outcome, transcript=()).to_json(),
                ),
            )

    def done_reps(self, round_id: str) -> set[tuple[str, str, str, int]]:
        rows = self._db.execute(
            "SELECT agent_hash, track, task_id, rep FROM reps WHERE round_id = ?", (round_id,)
        ).fetchall()
        return {(r[0], r[1], r[2], int(r[3])) for r in rows}

    def wall_spent(self, round_id: str) -> dict[tuple[str, str], float]:
        """Wall seconds each agent has used per track so far (for the round wall cap)."""
        rows = self._db.execute(
            "SELECT agent_hash, track, SUM(wall_s) FROM reps WHERE round_id = ? "
            "GROUP BY agent_hash, track",
            (round_id,),
        ).fetchall()
        return {(r[0], r[1]): float(r[2]) for r in rows}

    def inference_bodies(self, digests: Iterable[str]) -> dict[str, str]:
        """Stored request and response bodies by SHA-256 (digests not kept are absent)."""
        wanted = sorted(set(digests))
        found: dict[str, str] = {}
        for start in range(0, len(wanted), 500):  # SQLite caps the parameters of one query
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT sha256, body FROM inference_bodies WHERE sha256 IN ({marks})", chunk
            ).fetchall()
            found.update((r[0], r[1]) for r in rows)
        return found

    def task_outcomes(
        self, round_id: str, agent_hash: str, track: str, task_id: str
    ) -> list[RunOutcome]:
        """One agent's reps of one task, in rep order (their inference bodies stay apart)."""
        rows = self._db.execute(
            "SELECT outcome_json FROM reps WHERE round_id = ? AND agent_hash = ? AND track = ? "
            "AND task_id = ? ORDER BY rep",
            (round_id, agent_hash, track, task_id),
        ).fetchall()
        return [RunOutcome.from_json(text) for (text,) in rows]

    def outcomes(self, round_id: str) -> Iterator[RunOutcome]:
        cursor = self._db.execute(
            "SELECT outcome_json FROM reps WHERE round_id = ? "
            "ORDER BY track, agent_hash, task_id, rep",
            (round_id,),
        )
        for (text,) in cursor:
            yield RunOutcome.from_json(text)


def _open_read_only(path: Path, scratch: ExitStack) -> sqlite3.Connection:
    """`mode=ro` first: it sees a live writer's WAL. Where the directory cannot hold the
    WAL's index (a read-only mount), SQLite cannot open the store that way and nothing
    can write there either: the file is read as `immutable`, exactly as it lies. Commits
    still in a WAL left beside it would be invisible so, so then a private copy of the
    file and its WAL is read instead (in `scratch`, removed when the store closes)."""
    try:
        return _connect_read_only(path, path, "mode=ro")
    except sqlite3.Error:
        pass
    wal = path.with_name(path.name + "-wal")
    target, query = path, "mode=ro&immutable=1"
    if wal.is_file() and wal.stat().st_size:
        folder = Path(scratch.enter_context(tempfile.TemporaryDirectory(prefix="assay-store-")))
        target, query = folder / path.name, "mode=ro"
        shutil.copyfile(path, target)
        shutil.copyfile(wal, folder / wal.name)
    try:
        return _connect_read_only(target, path, query)
    except sqlite3.Error as exc:
        raise StoreError(f"store {path}: {exc}") from exc


def _connect_read_only(target: Path, path: Path, query: str) -> sqlite3.Connection:
    """A read-only connection to `target` (the store at `path`, or its copy), checked."""
    db = sqlite3.connect(
        f"{target.resolve().as_uri()}?{query}",
        uri=True,
        isolation_level=None,
        check_same_thread=False,
    )
    try:
        _check_schema(db, path)
        _stand_in_for_abstentions(db)
    except (sqlite3.Error, StoreError):
        db.close()
        raise
    return db


def _stand_in_for_abstentions(db: sqlite3.Connection) -> None:
    """A store written before schema 2, read without migrating it, has no abstained
    tracks: an empty temporary table (the connection's own, never the file's) stands in
    for the one it lacks, so every query reads the same."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "track_abstentions" not in tables:
        db.execute(
            "CREATE TEMP TABLE track_abstentions "
            "(round_id TEXT NOT NULL, track TEXT NOT NULL, reason TEXT NOT NULL)"
        )


def _check_schema(db: sqlite3.Connection, path: Path) -> None:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"schema_version", "rounds", "agents", "reps"} <= tables:
        raise StoreError(f"{path} is not a round store (it has no rounds table)")
    row = db.execute("SELECT version FROM schema_version").fetchone()
    if row is not None and row[0] > SCHEMA_VERSION:
        raise StoreError(
            f"store {path} has schema version {row[0]}, newer than this assay "
            f"understands ({SCHEMA_VERSION}); upgrade assay to read it"
        )


def _stored_round(row: tuple[Any, ...]) -> StoredRound:
    try:
        plan = RoundPlan.from_json(json.loads(row[2]))
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"round {row[0]}: its stored plan is unreadable ({exc!r})") from exc
    return StoredRound(
        round_id=row[0],
        seq=int(row[1]),
        plan=plan,
        status=row[3],
        reason=row[4],
        weights=json.loads(row[5]) if row[5] else None,
    )
