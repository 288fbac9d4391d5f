"""The executor axis: where a round's reps run (this machine, a Ray cluster, ...)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable
from dataclasses import dataclass

from assay.inference.interface import InferenceService
from assay.mechanism.spec import MechanismSpec
from assay.records.agent import short_hash
from assay.records.outcome import RunOutcome
from assay.runner.rep import RepTask, run_rep
from assay.sandbox import InfrastructureError, SandboxBackend
from assay.sandbox.interface import RunCancelled


@dataclass(frozen=True)
class RepFault:
    """A rep the validator could not run: an infrastructure fault of its own sandbox or
    inference session (never the agent's), confined to the rep's track."""

    task: RepTask
    error: str

    def describe(self) -> str:
        where = f"{self.task.track.value}/{self.task.task_id}"
        agent = short_hash(self.task.agent.agent_hash)
        return f"rep {self.task.rep} of {agent} on {where}: {self.error}"


Ended = RunOutcome | RepFault


@dataclass(frozen=True)
class RepRunner:
    """Everything a worker needs to run one rep; picklable for remote executors."""

    spec: MechanismSpec
    secret: bytes
    # The round's model, key included: travels like `secret`; None when it serves none.
    inference: InferenceService | None = None

    def __call__(self, task: RepTask, backend: SandboxBackend) -> Ended:
        try:
            return run_rep(
                task, backend=backend, spec=self.spec, secret=self.secret, inference=self.inference
            )
        except RunCancelled:
            raise  # the executor stopped it: never yielded, run again on resume
        except InfrastructureError as exc:
            return RepFault(task, f"{type(exc).__name__}: {exc}")


class Executor(ABC):
    name: str

    @abstractmethod
    def prepare(self) -> None:
        """Sweep what dead validators left and prove the sandbox sound where reps
        will run; raise `InfrastructureError` (the round abstains) when it is not."""

    @abstractmethod
    def execute(self, tasks: Iterable[RepTask], runner: RepRunner) -> Generator[Ended, None, None]:
        """Run the tasks, yielding each outcome as it completes (any order).

        `tasks` is consumed lazily, only as workers free up, so the caller can
        decide about a rep (e.g. the agent's round wall cap) as late as possible.
        A fault of one rep's own sandbox is yielded as a `RepFault` (the caller
        abstains on that rep's track); an `InfrastructureError` of the executor
        itself (its workers, an unsound node) propagates after in-flight work is
        stopped, and the caller abstains on the round. When the caller stops early (Ctrl-C,
        or the generator is closed), reps in flight are killed and their
        outcomes are never yielded: a resumed round runs them again.
        """
