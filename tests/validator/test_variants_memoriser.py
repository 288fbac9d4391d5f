"""Sealed rounds over every repository task of the bundled corpus: a memorising agent
(tests/agents/memoriser.py, a table from the content digests of every public corpus
file to its label) is paid without variants and not with them, while the reference
agent scores within 0.05 of itself. The repositories track needs no detonation, so
whole rounds fit in a test; benchmarks/variants_memoriser.py prints every track."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from assay.mechanism.spec import Track
from assay.records.scorecard import AgentTrackScore
from assay.runner.bundle import bundle_package
from assay.schema.mechanism_file import pinned
from assay.validator.config import RoundOverrides, round_config
from assay.validator.rounds import Round

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "agents"))
from memoriser import PUBLIC_CORPORA, memorised_table, write_memoriser  # noqa: E402

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def _scores(tmp: Path, agents: tuple[Path, ...], variants: bool) -> dict[str, AgentTrackScore]:
    overrides = RoundOverrides(
        corpus=ROOT / "corpus",
        agents=agents,
        tracks=(Track.REPOSITORIES,),
        db=tmp / f"variants-{variants}.db",
        secret_file=tmp / "validator.secret",
        round_seed="5eed",
        variants=variants,
    )
    started = Round.start(round_config(None, overrides), draw_all=True, reps=1)
    result = started.run()
    assert result.status == "completed" and result.card is not None
    scores = result.card.scores[Track.REPOSITORIES.value]
    return {result.agents[agent]: score for agent, score in scores.items()}


def test_a_memoriser_is_paid_only_without_variants(tmp_path: Path) -> None:
    memoriser = write_memoriser(
        memorised_table([ROOT / c for c in PUBLIC_CORPORA]), tmp_path / "memoriser.py"
    )
    reference = tmp_path / "reference.py"
    limit = pinned().sandbox.agent_code_bytes
    reference.write_bytes(bundle_package(ROOT / "agents" / "reference", max_bytes=limit).code)
    plain = _scores(tmp_path, (memoriser, reference), variants=False)
    varied = _scores(tmp_path, (memoriser, reference), variants=True)
    assert plain["memoriser"].eligible and plain["memoriser"].score > plain["memoriser"].threshold
    assert not varied["memoriser"].eligible
    assert abs(varied["reference"].score - plain["reference"].score) <= 0.05
