"""Round rules that need more than one round or a short spec: EMA, wall cap, eval, config."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import Track, parse_spec
from assay.mechanism.weights import ema
from assay.records.agent import Agent
from assay.records.outcome import FailureReason
from assay.schema.mechanism_file import pinned, pinned_bytes
from assay.store.sqlite import Store
from assay.validator.config import RoundOverrides, load_config, load_secret, round_config
from assay.validator.engine import RoundEngine, RoundLedger
from assay.validator.executors.local import LocalExecutor
from assay.validator.planning import make_plan
from inprocess_cli import run_cli

SPEC = pinned()

ROOT = Path(__file__).resolve().parents[2]
KEYWORD = ROOT / "agents" / "keyword.py"
ALLOW_ALL = ROOT / "agents" / "allow_all.py"
Assay = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.sandbox
def test_the_second_round_blends_with_the_last_written_vector(
    assay: Assay, small_corpus: Path, tmp_path: Path
) -> None:
    db = tmp_path / "ema.db"
    common = ["round", "run", "--corpus", str(small_corpus), "--db", str(db), "--json"]
    common += ["--agent", str(KEYWORD), "--agent", str(ALLOW_ALL), "--tracks", "skills"]
    first = json.loads(assay(*common, "--seed", "aa").stdout)
    second = json.loads(assay(*common, "--seed", "bb").stdout)
    assert first["weights"] == first["round_weights"]  # nothing earlier to blend with
    assert second["weights"] == ema(second["round_weights"], first["weights"], spec=SPEC)


@pytest.mark.sandbox
def test_an_agent_whose_round_wall_cap_is_spent_fails_its_remaining_reps(
    small_corpus: Path, tmp_path: Path
) -> None:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import time\n\ndef agent_main(context):\n    time.sleep(30)\n")
    raw = pinned_bytes().decode()
    raw = raw.replace(
        "tasks = 50\nreps = 3\ncpu_budget_s = 8.0", "tasks = 1\nreps = 3\ncpu_budget_s = 0.2"
    )
    spec = parse_spec(raw.encode())  # skills cap: 2 x 1 task x 3 reps x 0.2 s = 1.2 s of wall
    agent = Agent.load(sleeper)
    plan = make_plan(
        snapshots=tmp_path / "snapshots",
        corpus=NativeCorpus(small_corpus),
        agents=[agent],
        tracks=[Track.SKILLS],
        round_seed="cap",
        validator_id="test",
        spec=spec,
        draw_all=True,
    )
    store = Store(tmp_path / "cap.db")
    store.create_round("cap", plan, [agent])
    engine = RoundEngine(
        RoundLedger(store, "cap", spec), secret=b"s" * 32, executor=LocalExecutor(1)
    )
    result = engine.run()
    assert result.status == "completed"
    reasons = [o.reason for o in store.outcomes("cap")]
    assert reasons.count(FailureReason.WALL_BACKSTOP) >= 1
    assert reasons.count(FailureReason.ROUND_CAP) >= len(reasons) - 3
    assert all(r is not None for r in reasons)


@pytest.mark.sandbox
def test_eval_prints_the_metric_fields(assay: Assay, small_corpus: Path) -> None:
    common = ("--corpus", str(small_corpus), "--json", "--reps", "1")  # fields, not consensus
    result = assay("eval", str(KEYWORD), "--track", "skills", *common)
    payload = json.loads(result.stdout)
    assert payload["track"] == "skills" and payload["tasks"] == 2
    assert set(payload["confusion"]) == {"tp", "tn", "fp", "fn", "no_verdict"}
    assert {"mcc", "score", "threshold", "eligible", "task_results"} <= set(payload)
    first = payload["task_results"][0]
    assert {"task", "label", "verdict", "reps"} <= set(first)
    assert {"status", "reason", "detail", "cpu_s", "cpu_budget_s"} <= set(first["reps"][0])
    # On two tasks the keyword agent is not eligible (exit 1): the fields are what is checked.
    repos_run = assay("eval", str(KEYWORD), "--track", "repositories", *common, check=False)
    repos = json.loads(repos_run.stdout)
    assert all("f2" in t for t in repos["task_results"])


@pytest.mark.sandbox
def test_a_new_secret_is_private_and_a_readable_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "data" / "validator.secret"
    secret, created = load_secret(path)
    assert created and len(secret) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_secret(path) == (secret, False)
    os.chmod(path, 0o644)
    with pytest.raises(ValueError, match="readable by others"):
        load_secret(path)


def test_round_toml_is_read_and_flags_win(tmp_path: Path) -> None:
    config_file = tmp_path / "round.toml"
    config_file.write_text(
        '[round]\ncorpus = "c"\nagents = ["a.py", "b.py"]\ntracks = ["skills"]\n'
        'seed = "abc"\njobs = 3\n'
    )
    config = round_config(config_file, RoundOverrides(jobs=1, db=tmp_path / "x.db"))
    assert config.corpus == tmp_path / "c"
    assert config.agents == (tmp_path / "a.py", tmp_path / "b.py")
    assert config.tracks == (Track.SKILLS,) and config.round_seed == "abc"
    assert config.jobs == 1 and config.db == tmp_path / "x.db"
    config_file.write_text("[round]\nbogus = 1\n")
    with pytest.raises(ValueError, match="unknown keys"):
        load_config(config_file)


def test_the_cli_refuses_an_unknown_track(tmp_path: Path) -> None:
    result = run_cli(["round", "run", "--tracks", "videos", "--db", str(tmp_path / "x.db")])
    assert result.returncode != 0
    assert "tracks" in result.stderr
