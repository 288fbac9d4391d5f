"""The round's observer: detonate each behavioural task once, cached by artifact digest
(within the round, and across rounds of the day with a `DetonationCache`)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from assay.detonate.cache import DetonationCache
from assay.detonate.core import detonate
from assay.mechanism.spec import Track
from assay.records.observed import Observed
from assay.sandbox.interface import SandboxBackend


class Detonatable(Protocol):
    """What the observer needs of a planned task (the round's plan satisfies it)."""

    @property
    def track(self) -> Track: ...

    @property
    def artifact_dir(self) -> str: ...

    @property
    def artifact_digest(self) -> str: ...


class DetonationObserver:
    """Callable the round hands each planned task; the result becomes
    `context.observed` for every agent on that task and is stored with the round.

    Identical artifacts (same digest) are detonated once per round, and once a day
    with a `kept` cache.
    """

    def __init__(self, backend: SandboxBackend, kept: DetonationCache | None = None) -> None:
        self.backend = backend
        self.kept = kept
        self._cache: dict[str, Observed] = {}

    def __call__(self, task: Detonatable) -> Observed | None:
        if not task.track.behavioural:
            return None
        if task.artifact_digest not in self._cache:
            self._cache[task.artifact_digest] = self._observe(task)
        return self._cache[task.artifact_digest]

    def _observe(self, task: Detonatable) -> Observed:
        def run() -> Observed:
            artifact = Path(task.artifact_dir)
            return detonate(artifact, task.track, backend=self.backend).observed()

        if self.kept is None:
            return run()
        return self.kept.observe(task.track, task.artifact_digest, run)
