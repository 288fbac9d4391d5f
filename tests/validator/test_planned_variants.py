"""A round's variants as planned: every drawn artifact is shown in new bytes, the plan
keeps both digests, the labels' lines follow their lines, the same seed and secret
give the same variant, and chain mode turns variants on by default."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from assay.chain.snapshot import synthetic_snapshot, write_snapshot
from assay.corpus.native import NativeCorpus
from assay.corpus.variants.keyed import variant_key
from assay.mechanism.matching import FindingItem, VulnerabilityItem
from assay.mechanism.spec import TRACKS, Track
from assay.records.agent import Agent
from assay.records.plan import PlannedTask, RoundPlan
from assay.schema.mechanism_file import pinned
from assay.store.sqlite import Store
from assay.validator.config import ConfigError, RoundOverrides, load_config, round_config
from assay.validator.planning import make_plan
from assay.validator.rounds import Round
from assay.validator.snapshot import snapshot_artifact
from assay.validator.variants import Variation

ROOT = Path(__file__).resolve().parents[2]
SECRET = b"v" * 32
AGENT = Agent(b"def agent_main(context):\n    return {}\n")


def _plan(
    snapshots: Path,
    seed: str,
    secret: bytes | None,
    tracks: Sequence[Track] = TRACKS,
) -> RoundPlan:
    return make_plan(
        corpus=NativeCorpus(ROOT / "corpus"),
        agents=[AGENT],
        tracks=tracks,
        round_seed=seed,
        validator_id="local",
        spec=pinned(),
        snapshots=snapshots,
        draw_all=True,
        variant_secret=secret,
    )


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RoundPlan]:
    """The whole bundled corpus planned plain, varied, varied again, and varied anew."""
    root = tmp_path_factory.mktemp("variants")
    return {
        "plain": _plan(root / "plain", "5eed", None),
        "varied": _plan(root / "varied", "5eed", SECRET),
        "again": _plan(root / "again", "5eed", SECRET),
        "reseeded": _plan(root / "reseeded", "5eee", SECRET),
    }


def _by_id(plan: RoundPlan) -> dict[str, PlannedTask]:
    return {f"{t.track.value}/{t.task_id}": t for t in plan.tasks}


def test_every_artifact_is_new_and_keeps_its_original_digest(
    plans: dict[str, RoundPlan],
) -> None:
    plain, varied = _by_id(plans["plain"]), _by_id(plans["varied"])
    assert plans["varied"].variants and not plans["plain"].variants
    assert set(plain) == set(varied)
    for key, task in varied.items():
        assert task.original_digest == plain[key].artifact_digest, key
        assert task.artifact_digest != task.original_digest, key
        assert plain[key].original_digest is None


def test_the_same_seed_and_secret_give_the_same_variant(plans: dict[str, RoundPlan]) -> None:
    varied, again = _by_id(plans["varied"]), _by_id(plans["again"])
    reseeded = _by_id(plans["reseeded"])
    assert {k: t.artifact_digest for k, t in varied.items()} == {
        k: t.artifact_digest for k, t in again.items()
    }
    assert [t.planted for t in varied.values()] == [t.planted for t in again.values()]
    assert all(reseeded[k].artifact_digest != t.artifact_digest for k, t in varied.items())


def _line(task: PlannedTask, file: str, line: int) -> str:
    return (Path(task.artifact_dir) / file).read_text().splitlines()[line - 1]


def test_labels_lines_are_the_same_lines_in_the_variant(plans: dict[str, RoundPlan]) -> None:
    plain, varied = _by_id(plans["plain"]), _by_id(plans["varied"])
    moved = 0
    for key, task in varied.items():
        before: tuple[FindingItem | VulnerabilityItem, ...] = (
            *plain[key].planted,
            *plain[key].expected_findings,
        )
        after: tuple[FindingItem | VulnerabilityItem, ...] = (
            *task.planted,
            *task.expected_findings,
        )
        for old, new in zip(before, after, strict=True):
            if old.file is None or not isinstance(old.line, int):
                assert new == old
                continue
            assert isinstance(new.line, int)
            assert _line(task, old.file, new.line) == _line(plain[key], old.file, old.line), key
            moved += new.line != old.line
    assert moved > 10  # the lines did move: the check above is not a tautology


def test_variants_is_a_boolean_in_round_toml(tmp_path: Path) -> None:
    config = tmp_path / "round.toml"
    config.write_text("[round]\nvariants = true\n")
    assert load_config(config).variants is True
    config.write_text('[round]\nvariants = "yes"\n')
    with pytest.raises(ConfigError, match="variants must be true or false"):
        load_config(config)


def _started(tmp_path: Path, name: str, subnet: Path | None, variants: bool | None) -> bool:
    overrides = RoundOverrides(
        corpus=ROOT / "corpus",
        agents=(ROOT / "agents" / "allow_all.py",),
        tracks=(Track.SKILLS,),
        db=tmp_path / f"{name}.db",
        secret_file=tmp_path / "validator.secret",
        # A chain-mode round takes its seed from the subnet, so only a local one names one.
        round_seed=None if subnet else "5eed",
        variants=variants,
    )
    started = Round.start(round_config(None, overrides), subnet=subnet, tasks_cap=2)
    with Store(started.store_path, read_only=True) as store:
        return store.round(started.round_id).plan.variants


def test_chain_mode_shows_variants_unless_the_config_says_otherwise(tmp_path: Path) -> None:
    subnet = tmp_path / "subnet.json"
    write_snapshot(synthetic_snapshot(netuid=1, uids=4, validators=1), subnet)
    assert _started(tmp_path, "chain", subnet, None) is True
    assert _started(tmp_path, "local", None, None) is False
    assert _started(tmp_path, "chain-off", subnet, False) is False
    assert _started(tmp_path, "local-on", None, True) is True


def test_a_signed_file_keeps_its_bytes(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "dist.js").write_text("const a = 1;\n\nmodule.exports = a;\n")
    (source / "dist.js.asc").write_text("-----BEGIN PGP SIGNATURE-----\n")
    (source / "main.py").write_text("import os\n\nprint(os.sep)\n")
    variation = Variation(Track.PACKAGES, variant_key("5eed", SECRET))
    snapshot_artifact(source, tmp_path / "variant", prepare=variation)
    assert (tmp_path / "variant" / "dist.js").read_bytes() == (source / "dist.js").read_bytes()
    assert set(variation.varied) == {"main.py", "dist.js.asc"}
    assert variation.added is not None and (tmp_path / "variant" / variation.added).is_file()
