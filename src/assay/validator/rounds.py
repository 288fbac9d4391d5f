"""The validator's entry point for rounds: start one, resume one, open one to read.

A front end (the CLI, a script) parses its options into a `RoundConfig`, calls
one of these and prints the `RoundResult`; admission, planning, detonation,
execution and scoring all happen behind them.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec

from assay.attest.intake import Admission, admit_files
from assay.chain.snapshot import read_snapshot
from assay.corpus.native import NativeCorpus
from assay.corpus.validate import require_valid
from assay.detonate.cache import DetonationCache
from assay.detonate.observer import DetonationObserver
from assay.inference.config import resolve_upstream
from assay.records.chain import MetagraphSnapshot
from assay.records.outcome import RunOutcome
from assay.records.plan import RoundPlan, SharedDraw
from assay.records.round import RoundResult
from assay.sandbox import default_backend
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import RoundSummary, Store, StoreError
from assay.validator.arrivals import StoreArrivals
from assay.validator.config import (
    ConfigError,
    RoundConfig,
    check_jobs,
    default_db,
    default_secret_file,
    load_secret,
)
from assay.validator.engine import Abstained, RoundEngine, RoundLedger, make_executor
from assay.validator.planning import make_plan, one_label_tracks, shared_draw
from assay.validator.snapshot import prune_snapshots, snapshot_root
from assay.validator.subnet import registered_on

Notify = Callable[[str], None]  # a message for the operator (stderr in the CLI)


def quiet(_: str) -> None:
    """The default `Notify`: say nothing."""


@dataclass(frozen=True)
class ExecutionChoice:
    """How a round's reps are run; not part of the round (a resume may choose anew)."""

    executor: str = "local"
    jobs: int | None = None
    address: str | None = None  # a Ray cluster, for the ray executor


class Round:
    """One round in its store, ready to run to completion (or abstention)."""

    def __init__(self, store: Store, round_id: str, secret: bytes, how: ExecutionChoice) -> None:
        ledger = RoundLedger(store, round_id, pinned())
        # Behavioural tasks are detonated once each (DESIGN §8) before any rep runs,
        # on this host whatever the executor.
        observer = DetonationObserver(default_backend(), DetonationCache.configured())
        executor = make_executor(how.executor, how.jobs, how.address)
        self.engine = RoundEngine(ledger, secret=secret, executor=executor, observer=observer)

    @property
    def round_id(self) -> str:
        return self.engine.round_id

    @property
    def store_path(self) -> Path:
        return self.engine.store.path

    def pending(self) -> int:
        """Reps still to run."""
        return len(self.engine.ledger.pending())

    def run(
        self,
        on_outcome: Callable[[RunOutcome], None] | None = None,
        on_detonation: Callable[[int, int], None] | None = None,
    ) -> RoundResult:
        """Every pending rep, then scores and weights. On Ctrl-C every finished rep is
        stored and `Round.resume` runs exactly the others. `on_detonation(done, total)`
        hears of the artifacts detonated before the first rep."""
        if on_outcome is not None:
            self.engine.on_outcome = on_outcome
        if on_detonation is not None:
            self.engine.on_detonation = on_detonation
        return self.engine.run()

    @classmethod
    def start(
        cls,
        config: RoundConfig,
        *,
        manifests: Sequence[Path] = (),
        reps: int | None = None,
        draw_all: bool = False,
        tasks_cap: int | None = None,
        notify: Notify = quiet,
        subnet: Path | None = None,
    ) -> Round:
        """Admit the submissions, plan and store a new round (nothing runs yet). With a
        `subnet` snapshot the round is in chain mode: manifests of hotkeys it does not
        register are refused, and the draw is the shared one anchored at the snapshot's
        anchor block (`mechanism/draw.py`). `tasks_cap` keeps at most that many of each
        track's drawn tasks (a quick trial)."""
        require_valid(config.corpus, config.tracks)
        if config.inference is not None:
            resolve_upstream(config.inference)  # an unset key variable stops here, before the round
        secret = _secret(config.secret_file, notify)
        metagraph = read_snapshot(subnet) if subnet else None
        owners = registered_on(metagraph) if metagraph else None
        store = Store(config.db)
        admission = admit_files(
            config.agents, manifests, config.tracks, pinned(), owners, StoreArrivals(store)
        )
        for note in admission.notes:
            notify(note)
        round_id = store.next_round_id()
        if tasks_cap is not None:
            notify(
                f"a trial: at most {tasks_cap} task(s) per track, the first of the seeded draw, "
                "not the mechanism's full draw"
            )
        snapshots = snapshot_root(config.db, round_id)
        seed = _seed(config, metagraph, notify)
        # Chain mode (a subnet snapshot, as `serve` always has) shows variants unless the
        # round.toml says otherwise: a miner's scores must not come from a public table.
        variants = config.variants if config.variants is not None else subnet is not None
        plan = _plan(
            config,
            seed,
            admission,
            snapshots,
            reps,
            draw_all,
            tasks_cap,
            secret if variants else None,
        )
        for track, label in one_label_tracks(plan).items():
            notify(
                f"warning: every drawn {track.value} task is {label}: MCC needs both labels, "
                "so every agent scores 0 on this draw (draw more tasks)"
            )
        store.create_round(round_id, plan, list(admission.agents))
        # Rounds completed on every track are never resumed: their artifact snapshots are
        # not needed again.
        prune_snapshots(config.db, lambda other: _completed(store, other))
        how = ExecutionChoice(config.executor, config.jobs, config.address)
        return cls(store, round_id, secret, how)

    @classmethod
    def resume(
        cls,
        round_id: str | None = None,
        *,
        db: Path | None = None,
        secret_file: Path | None = None,
        how: ExecutionChoice = ExecutionChoice(),
    ) -> Round:
        """An interrupted round (the latest unfinished one when no id is given), or a
        completed one with tracks the validator abstained on: those run again."""
        check_jobs(how.jobs)
        store = Store(db or default_db(), create=False)
        round_id = round_id or store.latest_unfinished()
        if round_id is None:
            raise StoreError(f"{store.path} has no unfinished round")
        if _completed(store, round_id):
            raise StoreError(f"round {round_id} is already completed")
        store.reopen(round_id)
        secret, _ = load_secret(secret_file or default_secret_file())
        return cls(store, round_id, secret, how)


def _secret(path: Path, notify: Notify) -> bytes:
    secret, created = load_secret(path)
    if created:
        notify(
            f"created a validator secret at {path} (mode 0600): every rep's nonce and probe "
            "derive from it, so keep it private, and keep it for `round resume`"
        )
    return secret


def _seed(
    config: RoundConfig, metagraph: MetagraphSnapshot | None, notify: Notify
) -> str | SharedDraw:
    """The round's seed: in chain mode the shared draw anchored on the subnet (an
    operator's seed there would make this validator disagree with every other), else
    the operator's seed or a random one."""
    if metagraph is None:
        return config.round_seed or secrets.token_hex(16)
    if metagraph.anchor_block is None or metagraph.block_hash is None:
        notify(
            f"the snapshot of subnet {metagraph.netuid} has no anchor block (a version 1 file "
            "or one written by hand): this round's draw is this validator's own, not the "
            "shared one; `assay chain snapshot` writes the anchor"
        )
        return config.round_seed or secrets.token_hex(16)
    refuse_own_seed(config, metagraph)
    return shared_draw(
        NativeCorpus(config.corpus),
        config.tracks,
        netuid=metagraph.netuid,
        anchor_block=metagraph.anchor_block,
        block_hash=metagraph.block_hash,
    )


def refuse_own_seed(config: RoundConfig, metagraph: MetagraphSnapshot) -> None:
    """A configuration error when an operator's seed would replace the subnet's shared
    draw (a snapshot with an anchor block)."""
    if config.round_seed is not None and metagraph.anchor_block is not None:
        raise ConfigError(
            "a round seed is for local rounds: in chain mode the seed comes from the "
            f"subnet's anchor block ({metagraph.anchor_block}) and the corpus"
        )


def _plan(
    config: RoundConfig,
    seed: str | SharedDraw,
    admission: Admission,
    snapshots: Path,
    reps: int | None,
    draw_all: bool,
    tasks_cap: int | None,
    variant_secret: bytes | None,
) -> RoundPlan:
    plan = make_plan(
        corpus=NativeCorpus(config.corpus),
        agents=admission.agents,
        tracks=config.tracks,
        round_seed=seed,
        validator_id=config.validator_id,
        spec=pinned(),
        snapshots=snapshots,
        reps=reps,
        draw_all=draw_all,
        tasks_cap=tasks_cap,
        variant_secret=variant_secret,
    )
    plan = msgspec.structs.replace(
        plan,
        refused=admission.refused,
        manifests=admission.manifests,
        entries=admission.entries,
        arrival_order=tuple(a.agent_hash for a in admission.agents),
    )
    if config.inference is None:
        return plan
    models = {
        a.agent_hash: config.inference.model_for(admission.requested_model(a.agent_hash))
        for a in admission.agents
    }
    reps = sum(
        plan.reps[task.track] * sum(not plan.refusal(a, task.track) for a in plan.agents)
        for task in plan.tasks
    )
    return msgspec.structs.replace(plan, inference=config.inference.planned(reps), models=models)


def _completed(store: Store, round_id: str) -> bool:
    """Completed on every track: never resumed again."""
    try:
        return store.round(round_id).status == "completed" and not store.abstained_tracks(round_id)
    except StoreError:
        return False  # not a round of this store: not ours to remove


def stored_result(round_id: str, db: Path | None = None) -> RoundResult:
    """A stored round as `round report` shows it: recomputed from its rep rows, with the
    store's weight history for the chart."""
    with Store(db or default_db(), read_only=True) as store:
        result = RoundLedger(store, round_id, pinned()).result()
        return replace(result, weight_history=store.weight_history())


def list_rounds(db: Path | None = None) -> list[RoundSummary]:
    """Every round in the store, oldest first."""
    with Store(db or default_db(), read_only=True) as store:
        return store.summaries()


__all__ = ["Abstained", "ExecutionChoice", "Round", "list_rounds", "stored_result"]
