"""A round's variant behaves as its original: detonated in the real sandbox, each shows
the same capabilities under the same profiles (an environment-keyed sample still fires
only under CI), so what agents are told was observed does not move with the bytes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from assay.corpus.interface import Task
from assay.corpus.native import NativeCorpus
from assay.corpus.variants.keyed import variant_key
from assay.detonate import detonate
from assay.mechanism.spec import BEHAVIOURAL_TRACKS
from assay.records.observed import Observed
from assay.sandbox.bwrap import BwrapBackend
from assay.validator.snapshot import snapshot_artifact
from assay.validator.variants import Variation, task_variant_key

pytestmark = [pytest.mark.sandbox, pytest.mark.slow, pytest.mark.timeout(1200)]

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
# Two per behavioural track, each with labelled capabilities; the CI-keyed ones check
# that the profile a capability shows under does not move either. Their originals are
# detonated by tests/detonate/test_detonate_corpus.py too (one cached detonation).
SAMPLES = (
    "skills/skill-0001",
    "skills/skill-0028",
    "mcp_servers/mcp-0009",
    "mcp_servers/mcp-0031",
    "packages/pkg-0005",
    "packages/pkg-0039",
)
TASKS = {
    f"{t.track.value}/{t.task_id}": t
    for track in BEHAVIOURAL_TRACKS
    for t in NativeCorpus(CORPUS).tasks(track)
}
Detonated = Callable[[str], Observed]  # the `detonations` fixture (tests/detonate/conftest.py)
ROUND_KEY = variant_key("5eed", b"detonation variants secret")


def _seen(observed: Observed) -> dict[str, tuple[str, ...]]:
    return {c.capability: tuple(sorted(c.profiles)) for c in observed.capabilities}


def _variant(task: Task, root: Path) -> Path:
    variation = Variation(task.track, task_variant_key(ROUND_KEY, task.track, task.task_id))
    snapshot_artifact(task.artifact_dir, root / "variant", prepare=variation)
    assert variation.varied, "the sample has files the variant changes"
    return root / "variant"


@pytest.mark.parametrize("key", SAMPLES)
def test_a_variant_shows_the_capabilities_of_its_original(
    key: str, detonations: Detonated, backend: BwrapBackend, tmp_path: Path
) -> None:
    task = TASKS[key]
    original = detonations(key)
    variant = detonate(_variant(task, tmp_path), task.track, backend=backend).observed()
    assert set(task.expected_capabilities) <= set(_seen(original))
    assert _seen(variant) == _seen(original)
    assert variant.gated == original.gated
