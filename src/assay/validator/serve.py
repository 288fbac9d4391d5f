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
"""

from __future__ import annotations

import os
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
from assay.chain.interface import Chain
from assay.chain.snapshot import write_snapshot
from assay.records.chain import ChainError, MetagraphSnapshot
from assay.store.sqlite import Store, StoreError
from assay.validator.config import ConfigError, RoundConfig, data_dir
from assay.validator.http_intake import intake_app, start_intake
from assay.validator.rounds import ExecutionChoice, Round
from assay.validator.subnet import AlreadySet, Retry, set_round_weights

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
        self.stop = threading.Event()
        self.repush_floor_s = repush_floor_s
        self.clock = clock
        self._repush_period_s = repush_floor_s
        # Since the start, not since never: a restarted validator may have just set them.
        self._last_set_at = clock()
        self._repushing = threading.Lock()

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
        """Cycle `cycles` times (forever when None) until SIGTERM, pausing in between."""
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            done = 0
            while not self.stop.is_set() and (cycles is None or done < cycles):
                self.cycle()
                done += 1
                self.between_cycles(done)
                if cycles is None or done < cycles:
                    self._show(phase="idle")
                    self.stop.wait(pause_s)
        except KeyboardInterrupt:
            pass  # SIGTERM or Ctrl-C: every finished rep is stored; a restart resumes
        finally:
            signal.signal(signal.SIGTERM, previous)
            self._show(phase="stopped")
        return self.status

    def cycle(self) -> bool:
        """One round run (True) or nothing to run; weights pending from before are set."""
        snapshot = self._snapshot()
        if snapshot is None:
            return False
        subnet = self.status_path.with_name("subnet.json")
        write_snapshot(snapshot, subnet)
        self._set_pending(snapshot.netuid)
        limit_s = snapshot.hyperparameters.weights_rate_limit * _BLOCK_S
        self._repush_period_s = max(self.repush_floor_s, limit_s)
        self._show(repush_period_s=self._repush_period_s)
        round_ = self._next_round(subnet)
        if round_ is None:
            return False
        total = round_.pending()
        self._show(phase="round", round_id=round_.round_id, reps_done=0, reps_total=total)
        round_.run(lambda _: self._after_rep())
        self._show(rounds_completed=self.status.rounds_completed + 1)
        self._set_weights(round_.round_id)
        return True

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

    def _next_round(self, subnet: Path) -> Round | None:
        with Store(self.config.db) as store:
            unfinished = store.latest_unfinished()
        how = ExecutionChoice(self.config.executor, self.config.jobs, self.config.address)
        if unfinished is not None:
            return Round.resume(
                unfinished, db=self.config.db, secret_file=self.config.secret_file, how=how
            )
        manifests = tuple(sorted(self.drop.glob("*.manifest.json")))
        if not manifests:
            return None
        return Round.start(self.config, manifests=manifests, subnet=subnet)

    def _after_rep(self) -> None:
        self._show(reps_done=self.status.reps_done + 1)
        if self.clock() - self._last_set_at >= self._repush_period_s:
            self._repush()

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
        except (ChainError, StoreError) as exc:  # the chain down, or no registered UID to pay
            self._error(f"setting {round_id}'s weights: {exc}")
            return
        finally:
            # Tried, taken or not: the next try waits a whole period, so an outage is
            # retried once per period rather than after every rep.
            self._last_set_at = self.clock()
        receipt = result.receipt
        if receipt is not None and receipt.success:
            self._show(last_weights_round=round_id, last_weights_block=receipt.block)
        elif receipt is not None:
            self._error(f"setting {round_id}'s weights: {receipt.message}")

    def _counted_pause(self, seconds: float) -> None:
        """The retry's pause, counted in the status as a chain retry."""
        self._show(chain_retries=self.status.chain_retries + 1)
        self.retry.sleep(seconds)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve(
    config: RoundConfig,
    chain: Chain,
    *,
    drop: Path,
    status_path: Path,
    cycles: int | None = None,
    pause_s: float = 60.0,
    metrics_port: int | None = None,
    intake_port: int | None = None,
    validator_hotkey: str | None = None,
    notices: tuple[str, ...] = (),
) -> ServeStatus:
    """`assay validator serve`; during a round the last weights are re-pushed at most
    every `pause_s` and never faster than the subnet's rate limit. The Prometheus endpoint
    and the miners' HTTP intake (`http_intake.py`, addressed to `validator_hotkey`)
    listen on localhost only."""
    if not drop.is_dir():
        raise ConfigError(f"drop folder {drop} is not a folder")
    status_path.parent.mkdir(parents=True, exist_ok=True)
    metrics = Metrics()
    if metrics_port is not None:
        start_http_server(metrics_port, addr="127.0.0.1", registry=metrics.registry)
    intake = None
    if intake_port is not None:
        if validator_hotkey is None:
            raise ConfigError("the intake needs this validator's hotkey: set [chain] hotkey")
        subnet = status_path.with_name("subnet.json")  # the snapshot each cycle writes
        app = intake_app(drop, validator_hotkey=validator_hotkey, subnet=subnet, db=config.db)
        intake = start_intake(app, intake_port)
    server = Server(
        config, chain, drop=drop, status_path=status_path, metrics=metrics, repush_floor_s=pause_s
    )
    server.status.notices = list(notices)
    try:
        return server.serve(cycles, pause_s)
    finally:
        if intake is not None:
            intake.should_exit = True


def default_status_path() -> Path:
    return data_dir() / "serve-status.json"
