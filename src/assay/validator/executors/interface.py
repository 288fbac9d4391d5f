"""The executor axis: where a round's reps run (this machine, a Ray cluster, ...)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable
from dataclasses import dataclass

from assay.inference.interface import InferenceService
from assay.mechanism.spec import MechanismSpec
from assay.records.outcome import RunOutcome
from assay.runner.rep import RepTask, run_rep
from assay.sandbox import SandboxBackend


@dataclass(frozen=True)
class RepRunner:
    """Everything a worker needs to run one rep; picklable for remote executors."""

    spec: MechanismSpec
    secret: bytes
    # The round's model, key included: travels like `secret`; None when it serves none.
    inference: InferenceService | None = None

    def __call__(self, task: RepTask, backend: SandboxBackend) -> RunOutcome:
        return run_rep(
            task, backend=backend, spec=self.spec, secret=self.secret, inference=self.inference
        )


class Executor(ABC):
    name: str

    @abstractmethod
    def prepare(self) -> None:
        """Sweep what dead validators left and prove the sandbox sound where reps
        will run; raise `InfrastructureError` (the round abstains) when it is not."""

    @abstractmethod
    def execute(
        self, tasks: Iterable[RepTask], runner: RepRunner
    ) -> Generator[RunOutcome, None, None]:
        """Run the tasks, yielding each outcome as it completes (any order).

        `tasks` is consumed lazily, only as workers free up, so the caller can
        decide about a rep (e.g. the agent's round wall cap) as late as possible.
        An `InfrastructureError` from any rep propagates after in-flight work
        is stopped; the caller abstains. When the caller stops early (Ctrl-C,
        or the generator is closed), reps in flight are killed and their
        outcomes are never yielded: a resumed round runs them again.
        """
