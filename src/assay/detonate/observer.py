"""The round's observer: detonate each behavioural task once, cached by artifact digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.detonate.core import detonate
from assay.results.plan import PlannedTask
from assay.sandbox.interface import SandboxBackend


class DetonationObserver:
    """Callable the `RoundEngine` hands each planned task; the result becomes
    `context.observed` for every agent on that task and is stored with the round.

    Identical artifacts (same digest) are detonated once per round.
    """

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        self._cache: dict[str, dict[str, Any]] = {}

    def __call__(self, task: PlannedTask) -> dict[str, Any] | None:
        if not task.track.behavioural:
            return None
        if task.artifact_digest not in self._cache:
            result = detonate(Path(task.artifact_dir), task.track, backend=self.backend)
            self._cache[task.artifact_digest] = result.to_json()
        return self._cache[task.artifact_digest]
