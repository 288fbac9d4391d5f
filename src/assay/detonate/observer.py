"""The round's observer: detonate each behavioural task once, cached by artifact digest."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

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

    Identical artifacts (same digest) are detonated once per round.
    """

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        self._cache: dict[str, Observed] = {}

    def __call__(self, task: Detonatable) -> Observed | None:
        if not task.track.behavioural:
            return None
        if task.artifact_digest not in self._cache:
            result = detonate(Path(task.artifact_dir), task.track, backend=self.backend)
            self._cache[task.artifact_digest] = result.observed()
        return self._cache[task.artifact_digest]
