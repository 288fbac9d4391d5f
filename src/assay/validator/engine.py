"""plan → execute → store → reduce → score → weigh: the only place that knows the whole flow."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from assay.corpus.interface import CorpusError, artifact_digest
from assay.inference.config import resolve_upstream
from assay.inference.interface import InferenceService
from assay.inference.proxy import MeteredProxy
from assay.mechanism.spec import MechanismSpec, Track
from assay.mechanism.weights import ema
from assay.records.agent import Agent
from assay.records.diagnostics import diagnose
from assay.records.observed import Observed
from assay.records.outcome import FailureReason, RunOutcome, SandboxIdentity
from assay.records.plan import PlannedTask
from assay.records.rep import RepRecord, to_record
from assay.records.round import RoundResult
from assay.records.scorecard import Scorecard
from assay.runner.probe import derive_nonce
from assay.runner.rep import RepTask, unrun
from assay.sandbox import InfrastructureError
from assay.schema.inference import InferenceConfigError
from assay.store.sqlite import Store, StoreError
from assay.validator.executors.interface import Executor, RepFault, RepRunner
from assay.validator.scoring import scorecard, speaking_reps, task_matching
from assay.validator.screening import behavioural_copies

Observer = Callable[[PlannedTask], Observed | None]
ProgressHook = Callable[[RunOutcome], None]
# (detonations done, detonations to do) before each artifact is detonated, and once at the end.
DetonationHook = Callable[[int, int], None]


# What a rep that never ran records as its sandbox.
_NOT_RUN = SandboxIdentity(backend="none", digest="", sandboxed=False)


class Abstained(RuntimeError):
    """The validator abstains this round: an infrastructure fault, recorded with its reason."""


class TrackFault(RuntimeError):
    """An infrastructure fault confined to one track (its artifacts' snapshots, its
    detonations, one of its reps' sandboxes): the validator abstains on that track alone."""

    def __init__(self, track: Track, reason: str) -> None:
        super().__init__(reason)
        self.track = track


@dataclass
class _WallCap:
    """Per agent and track, the wall seconds used so far against the round cap."""

    spec: MechanismSpec
    spent: dict[tuple[str, str], float] = field(default_factory=dict)

    def exhausted(self, agent: str, track: Track) -> bool:
        return self.spent.get((agent, track.value), 0.0) >= self.spec.round_wall_cap_s(track)

    def add(self, outcome: RunOutcome) -> None:
        key = (outcome.agent_hash, outcome.track.value)
        self.spent[key] = self.spent.get(key, 0.0) + outcome.charged_wall_s


class RoundLedger:
    """The read side of a stored round: its plan, agents and results, recomputed from rows."""

    def __init__(self, store: Store, round_id: str, spec: MechanismSpec) -> None:
        self.store = store
        self.round_id = round_id
        self.spec = spec
        stored = store.round(round_id)
        self.seq = stored.seq
        self.plan = stored.plan
        self.agents = {a.agent_hash: a for a in store.agents(round_id)}
        mismatch = self.plan.mechanism_mismatch(round_id, spec)
        if mismatch:
            raise Abstained(mismatch)

    def abstained(self) -> dict[str, str]:
        """Tracks the validator abstained on (track -> reason)."""
        return self.store.abstained_tracks(self.round_id)

    def pending(self) -> list[tuple[PlannedTask, Agent, int]]:
        done = self.store.done_reps(self.round_id)
        todo = []
        for task in self.plan.tasks:
            for agent_hash in self.plan.agents:
                for rep in range(self.plan.reps[task.track]):
                    if (agent_hash, task.track.value, task.task_id, rep) not in done:
                        todo.append((task, self.agents[agent_hash], rep))
        return todo

    def records(self) -> Iterator[RepRecord]:
        """The records of the tracks scored: an abstained track's stored reps are whole,
        but the track is not, so none of them is scored or shown."""
        truth = {(t.track, t.task_id): t for t in self.plan.tasks}
        abstained = self.abstained()
        for outcome in self.store.outcomes(self.round_id):
            if outcome.track.value not in abstained:
                yield to_record(outcome, truth[(outcome.track, outcome.task_id)])

    def score(self, records: list[RepRecord]) -> Scorecard:
        return scorecard(
            records,
            salt=self.plan.round_seed,
            spec=self.spec,
            copies=behavioural_copies(records, self.plan),
        )

    def result(self, scored: tuple[list[RepRecord], Scorecard] | None = None) -> RoundResult:
        """The round as stored; `scored` passes records and scores just computed, so a
        round that finishes is not read and scored a second time."""
        stored = self.store.round(self.round_id)
        observed = self.store.observed(self.round_id)
        records, card = scored or (list(self.records()), None)
        speaking = speaking_reps(records)
        if card is None and stored.status == "completed":
            card = self.score(records)
        return RoundResult(
            round_id=self.round_id,
            status=stored.status,
            reason=stored.reason,
            abstained_tracks=self.abstained(),
            plan=self.plan,
            agents={h: a.name for h, a in self.agents.items()},
            card=card,
            weights=stored.weights or {},
            round_weights=card.weights if card else {},
            diagnostics=diagnose(records, self.spec),
            records=tuple(records),
            incomplete_detonations=incomplete_detonations(observed),
            observed=observed,
            speaking=speaking,
            matching=task_matching(records, speaking, self.spec),
        )


def incomplete_detonations(observed: dict[tuple[str, str], Observed]) -> dict[str, list[str]]:
    """ "track/task" -> why its detonation was disturbed, for the disturbed ones."""
    return {
        f"{track}/{task}": list(seen.interference)
        for (track, task), seen in sorted(observed.items())
        if not seen.complete
    }


class RoundEngine:
    """Runs (or resumes) one stored round to completion or abstention."""

    def __init__(
        self,
        ledger: RoundLedger,
        *,
        secret: bytes,
        executor: Executor,
        observer: Observer | None = None,
        on_outcome: ProgressHook | None = None,
    ) -> None:
        self.ledger = ledger
        self.store = ledger.store
        self.round_id = ledger.round_id
        self.spec = ledger.spec
        self.plan = ledger.plan
        self.secret = secret
        self.executor = executor
        self.observer = observer
        self.on_outcome = on_outcome or (lambda _: None)
        self.on_detonation: DetonationHook = lambda _done, _total: None
        self._abstained = {Track(t) for t in ledger.abstained()}

    # execution ----------------------------------------------------------------

    def run(self) -> RoundResult:
        """A fault confined to one track abstains that track (`TrackFault`); any other
        infrastructure fault (the store, the sandbox unsound, the executor, the inference
        upstream) abstains the round, as does a fault on every track. The store marks the
        round as held by this process while it runs (`Store.running`)."""
        with self.store.running(self.round_id):
            return self._run()

    def _run(self) -> RoundResult:
        try:
            self.executor.prepare()
            inference = self._inference()
            self._verify_artifacts()
            observed = self._observe_all()
            cap = _WallCap(self.spec, self.store.wall_spent(self.round_id))
            jobs = self._jobs(self.ledger.pending(), observed, cap)
            self._execute(jobs, cap, inference)
            return self.finish()
        except (InfrastructureError, StoreError, Abstained) as exc:
            self.store.abstain(self.round_id, f"{type(exc).__name__}: {exc}")
            return self.ledger.result()
        except Exception as exc:
            # Anything an agent controls is turned into that rep's failure before
            # it gets here; what is left is the validator's own fault, so it
            # abstains with the reason stored instead of leaving the round running.
            self.store.abstain(self.round_id, f"internal error: {type(exc).__name__}: {exc}")
            raise

    def _execute(
        self, jobs: Iterator[RepTask], cap: _WallCap, inference: InferenceService | None
    ) -> None:
        # On Ctrl-C the executor kills the reps in flight and yields nothing more:
        # every stored rep is whole, and `round resume` runs exactly the others.
        runner = RepRunner(self.spec, self.secret, inference)
        for ended in self.executor.execute(jobs, runner):
            if isinstance(ended, RepFault):
                # Reps of the track still in flight end and are stored (each is whole);
                # `_jobs` starts no more of them.
                self._abstain_track(TrackFault(ended.task.track, ended.describe()))
            else:
                self._record(ended, cap)

    def _abstain_track(self, fault: TrackFault) -> None:
        self.store.abstain_track(self.round_id, fault.track.value, str(fault))
        self._abstained.add(fault.track)

    def _inference(self) -> InferenceService | None:
        """The recorded upstream with its key, read now: a validator that cannot serve
        the round's model abstains rather than run its agents without it."""
        if self.plan.inference is None:
            return None
        try:
            return MeteredProxy(resolve_upstream(self.plan.inference))
        except InferenceConfigError as exc:
            raise Abstained(f"cannot start the inference proxy: {exc}") from exc

    def _tasks_of_live_tracks(self) -> Iterator[PlannedTask]:
        """The plan's tasks, those of tracks abstained on so far left out."""
        return (t for t in self.plan.tasks if t.track not in self._abstained)

    def _verify_artifacts(self) -> None:
        """The round's snapshots are still what was planned (a validator-owned copy that
        nothing should touch: a mismatch is the host's fault, so the validator abstains
        on the task's track)."""
        for task in self._tasks_of_live_tracks():
            try:
                _verify_artifact(task)
            except TrackFault as fault:
                self._abstain_track(fault)

    def _observe_all(self) -> dict[tuple[str, str], Observed]:
        observed = self.store.observed(self.round_id)
        if self.observer is None:
            return observed
        todo = [
            task
            for task in self._tasks_of_live_tracks()
            if task.track.behavioural and (task.track.value, task.task_id) not in observed
        ]
        for done, task in enumerate(todo):
            self.on_detonation(done, len(todo))
            key = (task.track.value, task.task_id)
            try:
                result = self.observer(task)
            except InfrastructureError as exc:
                # The detonation's sandbox failed (not the artifact: what an artifact
                # provokes ends as an incomplete detonation): its track cannot be served.
                where = f"detonation of {task.track.value}/{task.task_id}"
                self._abstain_track(TrackFault(task.track, f"{where}: {type(exc).__name__}: {exc}"))
                continue
            if result is not None:
                observed[key] = result
                self.store.put_observed(self.round_id, key[0], key[1], result)
        self.on_detonation(len(todo), len(todo))
        return observed

    def _jobs(
        self,
        todo: list[tuple[PlannedTask, Agent, int]],
        observed: dict[tuple[str, str], Observed],
        cap: _WallCap,
    ) -> Iterator[RepTask]:
        # Consumed lazily by the executor, so the wall cap (and whether the track is still
        # served) is checked just before each rep.
        for task, agent, rep in todo:
            if task.track in self._abstained:
                continue  # left pending: a resumed round runs it
            refusal = self.plan.refusal(agent.agent_hash, task.track)
            if refusal is not None:
                unrun = self._unrun(task, agent, rep, FailureReason.AGENT_INVALID, refusal)
                self._record(unrun, cap)
                continue
            if cap.exhausted(agent.agent_hash, task.track):
                self._record(self._capped(task, agent, rep), cap)
                continue
            seen = observed.get((task.track.value, task.task_id))
            yield self._rep_task(task, agent, rep, seen)

    def _rep_task(
        self, task: PlannedTask, agent: Agent, rep: int, observed: Observed | None = None
    ) -> RepTask:
        return RepTask(
            agent=agent,
            track=task.track,
            task_id=task.task_id,
            artifact_dir=Path(task.artifact_dir),
            rep=rep,
            round_seed=self.plan.round_seed,
            observed=observed,
            model=self.plan.models.get(agent.agent_hash),
        )

    def _capped(self, task: PlannedTask, agent: Agent, rep: int) -> RunOutcome:
        cap_s = self.spec.round_wall_cap_s(task.track)
        detail = f"round wall cap of {cap_s:.0f} s spent"
        return self._unrun(task, agent, rep, FailureReason.ROUND_CAP, detail)

    def _unrun(
        self,
        task: PlannedTask,
        agent: Agent,
        rep: int,
        reason: FailureReason,
        detail: str,
    ) -> RunOutcome:
        """A rep failed without running (agent refused at intake or its round cap spent)."""
        nonce = derive_nonce(self.secret, self.plan.round_seed, agent.agent_hash, task.task_id, rep)
        return unrun(self._rep_task(task, agent, rep), nonce, _NOT_RUN, reason, detail)

    def _record(self, outcome: RunOutcome, cap: _WallCap) -> None:
        self.store.put_rep(self.round_id, outcome)
        cap.add(outcome)
        self.on_outcome(outcome)

    # scoring --------------------------------------------------------------------

    def finish(self) -> RoundResult:
        abstained = self.ledger.abstained()
        missing = [p for p in self.ledger.pending() if p[0].track.value not in abstained]
        if missing:
            raise Abstained(f"{len(missing)} reps have no stored outcome")
        if abstained and set(abstained) >= {t.value for t in self.plan.reps}:
            reasons = "; ".join(f"{track}: {why}" for track, why in abstained.items())
            raise Abstained(f"every track abstained ({reasons})")
        records = list(self.ledger.records())
        card = self.ledger.score(records)
        previous = self.store.previous_weights(self.ledger.seq)
        weights = ema(card.weights, previous, spec=self.spec)
        self.store.finish(self.round_id, card, weights)
        return self.ledger.result((records, card))


def _verify_artifact(task: PlannedTask) -> None:
    where = f"{task.track.value}/{task.task_id}"
    try:
        digest = artifact_digest(Path(task.artifact_dir))
    except CorpusError as exc:
        raise TrackFault(task.track, f"artifact of {where} unreadable: {exc}") from exc
    if digest != task.artifact_digest:
        raise TrackFault(task.track, f"artifact of {where} changed since the round was planned")


def make_executor(name: str, jobs: int | None, address: str | None = None) -> Executor:
    """`address` (a Ray cluster) only means something to the ray executor."""
    if name == "local":
        from assay.validator.executors.local import LocalExecutor

        return LocalExecutor(jobs)
    if name == "ray":
        try:
            from assay.validator.executors.ray import RayExecutor
        except ImportError as exc:
            raise Abstained(f"the ray executor needs `pip install 'assay[ray]'` ({exc})") from exc
        return RayExecutor(address, jobs)
    raise Abstained(f"unknown executor {name!r} (available: local, ray)")
