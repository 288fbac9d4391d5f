"""`assay validator serve`: rounds one after another on a subnet, weights set after each.

One cycle: read the subnet (retried), resume the round in flight or start one from the
manifests in the drop folder (hotkeys the subnet does not register are refused at
intake), run it, and set its weights (retried). A chain that stays down delays the
weights, never the round: the next cycle sets the weights of every completed round the
chain has not taken yet before it starts another. While a round runs, the newest
completed round's weights are set again between reps once the subnet's rate limit
(WeightsSetRateLimit blocks of ~12 s, never less than the configured floor) has passed
since the last set, so its winners keep being paid; one such re-push never overlaps
another, and a chain that refuses it is an error in the status, not a stop. The state
is written to a status file after every step (`assay validator status` reads it) and
kept in Prometheus gauges. SIGTERM stops at once with every finished rep stored; a
restart resumes the round in flight.

The loop never dies of its input. Each cycle first records the arrival of every drop
file (`arrivals.py`); a submission that cannot even be read is moved to the drop's
`quarantine/` folder beside a file saying why, and named in the status. Any other
failure while admitting, planning or setting weights is recorded in the status and the
metrics, and the next cycle goes on; weights the chain or the subnet's limits refused
stay pending and are tried again next cycle, never before a new round. `serve` stops
only on SIGTERM or SIGINT, or at start on a configuration it cannot use.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import msgspec
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from assay import __version__
from assay.attest.intake import read_submission
from assay.attest.manifest import MANIFEST_SUFFIX, ManifestError
from assay.chain.conform import WeightLimitError
from assay.chain.interface import Chain
from assay.chain.snapshot import write_snapshot
from assay.records.agent import AgentError
from assay.records.chain import ChainError, MetagraphSnapshot
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store, StoreError
from assay.validator.arrivals import StoreArrivals, drop_manifests, record_drop
from assay.validator.config import ConfigError, RoundConfig, data_dir
from assay.validator.rounds import ExecutionChoice, Round, refuse_own_seed
from assay.validator.subnet import (
    AlreadySet,
    Retry,
    registered_as,
    registered_on,
    set_round_weights,
)

# Errors kept in the status, newest last.
_ERRORS_KEPT = 20
# A subtensor block's target time: the rate limit is counted in blocks.
_BLOCK_S = 12.0


class ServeStatus(msgspec.Struct, kw_only=True):
    phase: str = "starting"  # snapshot, round, weights, idle, stopped
    round_id: str | None = None
    reps_done: int = 0
    reps_total: int = 0
    rounds_completed: int = 0
    last_weights_round: str | None = None
    last_weights_block: int | None = None
    chain_retries: int = 0
    repushes: int = 0  # re-sets of the newest completed round's weights during a round
    repush_period_s: float | None = None
    errors: list[str] = []
    quarantined: list[str] = []  # drop files moved aside, each with the reason
    notices: list[str] = []  # standing warnings from the start (a public scoring corpus)


def read_status(path: Path) -> ServeStatus:
    return msgspec.json.decode(path.read_bytes(), type=ServeStatus)


@dataclass(eq=False)  # registered as a collector: hashed by identity
class Metrics:
    """What `/metrics` says: read from the serve status at each scrape. Totals since
    start are counters (`_total`), levels are gauges, and a block never set is absent
    rather than 0; `assay_up` and `assay_info` say the process is there, and which."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    status: ServeStatus = field(default_factory=ServeStatus)
    errors: int = 0

    def __post_init__(self) -> None:
        self.registry.register(self)

    def show(self, status: ServeStatus, errors: int) -> None:
        self.status, self.errors = msgspec.structs.replace(status), errors

    def collect(self) -> Iterator[Metric]:
        s = self.status
        yield GaugeMetricFamily("assay_up", "1 while the validator serves", value=1)
        info = InfoMetricFamily("assay", "the validator's version")
        info.add_metric([], {"version": __version__})
        yield info
        yield GaugeMetricFamily("assay_round_reps_done", "reps stored in the round", s.reps_done)
        yield GaugeMetricFamily("assay_round_reps_total", "reps in the round", s.reps_total)
        yield GaugeMetricFamily(
            "assay_submissions_quarantined", "drop files moved to quarantine", len(s.quarantined)
        )
        for name, doc, value in (
            ("assay_rounds_completed", "rounds completed", s.rounds_completed),
            ("assay_chain_retries", "chain calls retried", s.chain_retries),
            ("assay_errors", "errors since start", self.errors),
            ("assay_weight_repushes", "weights re-set during rounds", s.repushes),
        ):
            yield CounterMetricFamily(name, doc, value=value)
        if s.last_weights_block is not None:
            yield GaugeMetricFamily(
                "assay_last_weights_block", "block of the last set", s.last_weights_block
            )


class Server:
    def __init__(
        self,
        config: RoundConfig,
        chain: Chain,
        *,
        drop: Path,
        status_path: Path,
        retry: Retry | None = None,
        metrics: Metrics | None = None,
        between_cycles: Callable[[int], None] = lambda _: None,
        repush_floor_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.config = config
        self.chain = chain
        self.drop = drop
        self.status_path = status_path
        self.retry = retry or Retry()
        self.metrics = metrics or Metrics()
        self.between_cycles = between_cycles
        self.status = ServeStatus()
        self.error_count = 0
        # Set by SIGUSR1: the pause between cycles ends now (a validator operator who has
        # just dropped an agent need not wait out the interval).
        self.wake = threading.Event()
        self.repush_floor_s = repush_floor_s
        self.clock = clock
        self._repush_period_s = repush_floor_s
        # Since the start, not since never: a restarted validator may have just set them.
        self._last_set_at = clock()
        self._repushing = threading.Lock()
        self.say = say  # one line per cycle for the operator
        self._weights_note = "no completed round yet"

    # status -------------------------------------------------------------------

    def _show(self, **changes: object) -> None:
        for name, value in changes.items():
            setattr(self.status, name, value)
        temporary = self.status_path.with_name(self.status_path.name + ".tmp")
        temporary.write_bytes(msgspec.json.encode(self.status))
        os.replace(temporary, self.status_path)
        self.metrics.show(self.status, self.error_count)

    def _error(self, message: str) -> None:
        self.error_count += 1
        self._show(errors=[*self.status.errors, message][-_ERRORS_KEPT:])

    # the loop -----------------------------------------------------------------

    def serve(self, cycles: int | None = None, pause_s: float = 60.0) -> ServeStatus:
        """Cycle `cycles` times (forever when None) until SIGTERM, pausing in between
        (a pause SIGUSR1 ends early)."""
        previous = signal.signal(signal.SIGTERM, _interrupt)
        previous_wake = signal.signal(signal.SIGUSR1, lambda *_: self.wake.set())
        try:
            done = 0
            while cycles is None or done < cycles:
                self.guarded_cycle()
                done += 1
                self.between_cycles(done)
                if cycles is None or done < cycles:
                    self.wake.clear()
                    self._show(phase="idle")
                    self.wake.wait(pause_s)
        except KeyboardInterrupt:
            pass  # SIGTERM or Ctrl-C: every finished rep is stored; a restart resumes
        finally:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGUSR1, previous_wake)
            self._show(phase="stopped")
        return self.status

    def guarded_cycle(self) -> bool:
        """One cycle that no failure stops: what went wrong is recorded, the loop goes on."""
        phase = self.status.phase
        try:
            return self.cycle()
        except KeyboardInterrupt:
            raise
        # The loop's contract: nothing a cycle meets ends the service (a fault of the host
        # shows up in the status and the metrics; the operator's alert reads those).
        except Exception as exc:
            self._error(f"cycle failed in phase {self.status.phase}: {_described(exc)}")
            return False
        finally:
            s = self.status
            self.say(
                f"cycle: {phase} -> {s.phase}, round {s.round_id or '-'} "
                f"({s.reps_done}/{s.reps_total} reps), weights: {self._weights_note}"
            )

    def cycle(self) -> bool:
        """One round run (True) or nothing to run; weights pending from before are set."""
        snapshot = self._snapshot()
        if snapshot is None:
            return False
        subnet = self.status_path.with_name("subnet.json")
        write_snapshot(snapshot, subnet)
        manifests = self._readable(drop_manifests(self.drop))
        record_drop(
            self.config.db, manifests, self.config.tracks, pinned(), registered_on(snapshot)
        )
        self._set_pending(snapshot.netuid)
        limit_s = snapshot.hyperparameters.weights_rate_limit * _BLOCK_S
        self._repush_period_s = max(self.repush_floor_s, limit_s)
        self._show(repush_period_s=self._repush_period_s)
        round_ = self._next_round(subnet, manifests)
        if round_ is None:
            return False
        total = round_.pending()
        self._show(phase="round", round_id=round_.round_id, reps_done=0, reps_total=total)
        round_.run(lambda _: self._after_rep())
        self._show(rounds_completed=self.status.rounds_completed + 1)
        self._set_weights(round_.round_id)
        return True

    def _readable(self, manifests: tuple[Path, ...]) -> tuple[Path, ...]:
        """The drop's submissions that can be read; the others quarantined with the reason."""
        kept = []
        for path in manifests:
            try:
                read_submission(path)
            except (ManifestError, AgentError) as exc:
                self._quarantine(path, str(exc))
                continue
            # Whatever else reading hostile input raises costs that file alone.
            except Exception as exc:
                self._quarantine(path, _described(exc))
                continue
            kept.append(path)
        return tuple(kept)

    def _quarantine(self, manifest: Path, reason: str) -> None:
        moved = quarantine(self.drop, manifest, reason)
        note = f"{manifest.name}: {reason} (moved to {moved})"
        self._show(quarantined=[*self.status.quarantined, note][-_ERRORS_KEPT:])
        self._error(f"quarantined {note}")

    def _snapshot(self) -> MetagraphSnapshot | None:
        self._show(phase="snapshot")
        for attempt in range(1, self.retry.attempts + 1):
            try:
                return self.chain.snapshot()
            except ChainError as exc:
                self._error(f"reading the subnet: {exc}")
                self._show(chain_retries=self.status.chain_retries + 1)
                if attempt < self.retry.attempts:
                    self.retry.sleep(self.retry.backoff_s * 2 ** (attempt - 1))
        return None

    def _next_round(self, subnet: Path, manifests: tuple[Path, ...]) -> Round | None:
        with Store(self.config.db) as store:
            unfinished = store.latest_unfinished()
        how = ExecutionChoice(self.config.executor, self.config.jobs, self.config.address)
        if unfinished is not None:
            return Round.resume(
                unfinished, db=self.config.db, secret_file=self.config.secret_file, how=how
            )
        if not manifests:
            return None
        return Round.start(self.config, manifests=manifests, subnet=subnet)

    def _after_rep(self) -> None:
        self._show(reps_done=self.status.reps_done + 1)
        if self.clock() - self._last_set_at >= self._repush_period_s:
            try:
                self._repush()
            # A re-push is a courtesy to the last round's winners: its failure is an error
            # in the status, never the end of the round in flight.
            except Exception as exc:
                self._error(f"re-pushing weights: {_described(exc)}")

    def _repush(self) -> None:
        """The newest completed round's weights set again (forced), unless a re-push is
        already under way."""
        if not self._repushing.acquire(blocking=False):
            return
        try:
            with Store(self.config.db) as store:
                done = [s.round_id for s in store.summaries() if s.status == "completed"]
            if not done:
                return
            phase = self.status.phase
            self._show(repushes=self.status.repushes + 1)
            self._set_weights(done[-1], force=True)
            self._show(phase=phase)
        finally:
            self._repushing.release()

    def _set_pending(self, netuid: int) -> None:
        """The newest completed round's weights, when the chain has not taken them (an
        outage in the last cycle); older rounds' weights are superseded by it."""
        with Store(self.config.db) as store:
            done = [s.round_id for s in store.summaries() if s.status == "completed"]
            unset = done and not any(r.success for r in store.receipts(done[-1], netuid))
        if unset:
            self._set_weights(done[-1])

    def _set_weights(self, round_id: str, *, force: bool = False) -> None:
        self._show(phase="weights")
        retry = Retry(self.retry.attempts, self.retry.backoff_s, self._counted_pause)
        try:
            result = set_round_weights(
                round_id, self.chain, db=self.config.db, force=force, retry=retry
            )
        except AlreadySet:
            return
        # The chain down, no registered UID to pay, or the subnet's weight limits
        # (min allowed weights, max weight limit) unmet: pending, tried again next cycle.
        except (ChainError, StoreError, WeightLimitError) as exc:
            self._weights_note = f"{round_id} not set: {exc}"
            self._error(f"setting {round_id}'s weights: {exc}")
            return
        finally:
            # Tried, taken or not: the next try waits a whole period, so an outage is
            # retried once per period rather than after every rep.
            self._last_set_at = self.clock()
        receipt = result.receipt
        if receipt is not None and receipt.success:
            self._weights_note = f"{round_id} set at block {receipt.block}"
            self._show(last_weights_round=round_id, last_weights_block=receipt.block)
        elif receipt is not None:
            self._weights_note = f"{round_id} not set: {receipt.message}"
            self._error(f"setting {round_id}'s weights: {receipt.message}")

    def _counted_pause(self, seconds: float) -> None:
        """The retry's pause, counted in the status as a chain retry."""
        self._show(chain_retries=self.status.chain_retries + 1)
        self.retry.sleep(seconds)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


QUARANTINE = "quarantine"


def quarantine(drop: Path, manifest: Path, reason: str) -> Path:
    """Move a drop file (and the agent beside it: `<stem>.py`, or the intake's `<stem>/`
    folder) to `drop/quarantine/`, with `<name>.reason.txt` saying why; the quarantine
    folder."""
    folder = drop / QUARANTINE
    folder.mkdir(exist_ok=True)
    stem = manifest.name.removesuffix(MANIFEST_SUFFIX)
    for path in (manifest, drop / f"{stem}.py", drop / stem):
        if path.parent == drop and os.path.lexists(path):
            target = folder / path.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)  # an earlier quarantine under the same name
            os.replace(path, target)
    (folder / f"{manifest.name}.reason.txt").write_text(reason + "\n")
    return folder


def serve(
    config: RoundConfig,
    chain: Chain,
    *,
    drop: Path,
    status_path: Path,
    validator_hotkey: str,
    cycles: int | None = None,
    pause_s: float = 60.0,
    metrics_port: int | None = None,
    intake_port: int | None = None,
    say: Callable[[str], None] = lambda _: None,
    notices: tuple[str, ...] = (),
) -> ServeStatus:
    """`assay validator serve` as `validator_hotkey` (which the subnet must register);
    during a round the last weights are re-pushed at most every `pause_s` and never faster
    than the subnet's rate limit. The Prometheus endpoint and the miners' HTTP intake
    (`http_intake.py`, addressed to `validator_hotkey`) listen on localhost only; `say`
    gets the listen addresses, then one line per cycle."""
    if not drop.is_dir():
        raise ConfigError(f"drop folder {drop} is not a folder")
    _check_at_start(config, chain, validator_hotkey, say)
    status_path.parent.mkdir(parents=True, exist_ok=True)
    metrics = Metrics()
    if metrics_port is not None:
        start_http_server(metrics_port, addr="127.0.0.1", registry=metrics.registry)
        say(f"metrics on http://127.0.0.1:{metrics_port}/metrics")
    intake = None
    if intake_port is not None:
        # The intake's web stack and the SDK's signatures load in about a second: paid by
        # a serve that opens an intake, not by every command that imports this module.
        from assay.validator.http_intake import intake_app, start_intake

        subnet = status_path.with_name("subnet.json")  # the snapshot each cycle writes
        app = intake_app(
            drop,
            validator_hotkey=validator_hotkey,
            subnet=subnet,
            db=config.db,
            on_accept=_arrival_recorder(config.db),
        )
        intake = start_intake(app, intake_port)
        say(f"intake on http://127.0.0.1:{intake_port}/submit for {validator_hotkey}")
    server = Server(
        config,
        chain,
        drop=drop,
        status_path=status_path,
        metrics=metrics,
        repush_floor_s=pause_s,
        say=say,
    )
    server.status.notices = list(notices)
    try:
        return server.serve(cycles, pause_s)
    finally:
        if intake is not None:
            intake.should_exit = True


def _check_at_start(
    config: RoundConfig, chain: Chain, hotkey: str, say: Callable[[str], None]
) -> None:
    """What would fail every cycle is a configuration error at start: a hotkey the subnet
    does not register (it could never set a weight), a seed that would replace the
    subnet's shared draw. A chain that cannot be read yet is the loop's to retry."""
    try:
        uid = registered_as(chain, hotkey)
        refuse_own_seed(config, chain.snapshot())
    except ChainError as exc:
        say(f"cannot read the subnet yet ({exc}); each cycle tries again")
        return
    say(f"serving as {hotkey} (UID {uid})")


def _arrival_recorder(db: Path) -> Callable[[str, bytes], None]:
    """What the intake calls as it accepts a submission: its arrival, in the store."""

    def record(hotkey: str, code: bytes) -> None:
        with Store(db) as store:
            StoreArrivals(store).arrival(hotkey, hashlib.sha256(code).hexdigest())

    return record


def default_status_path() -> Path:
    return data_dir() / "serve-status.json"
