"""A round with a model, through the CLI: usage in store and reports, the key in none of them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_upstream import COMPLETION_TOKENS, KEY, PROMPT_TOKENS, FakeUpstream

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

Assay = Callable[..., subprocess.CompletedProcess[str]]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "model_agent.py"

TWICE = """
import json, socket, subprocess, urllib.request

def agent_main(context):
    p = context["probe"]
    open(p["file_path"], "w").write(p["file_content"])
    try:
        socket.getaddrinfo(p["dns_host"], 80)
    except OSError:
        pass
    subprocess.run(["echo", p["process_echo"]])
    inference = context["inference"]
    for question in ("first", "second"):
        request = urllib.request.Request(
            inference["api"] + "/v1/chat/completions",
            data=json.dumps({"messages": [{"role": "user", "content": question}]}).encode(),
            headers={"Authorization": "Bearer " + inference["api_key"]},
        )
        urllib.request.urlopen(request, timeout=30).read()
    return {"verdict": "WARN",
            "evidence": {"action_plane": {"capabilities": []},
                         "context_plane": {"injected_instructions": []}}}
"""


@pytest.fixture(autouse=True)
def provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set before the `assay` fixture copies the environment for its subprocesses."""
    monkeypatch.setenv("ASSAY_TEST_KEY", KEY)
    monkeypatch.delenv("ASSAY_UNSET_KEY", raising=False)


def _round_toml(
    tmp_path: Path,
    upstream: FakeUpstream,
    corpus: Path,
    agents: list[Path],
    key_env: str = "ASSAY_TEST_KEY",
) -> Path:
    config = tmp_path / "round.toml"
    config.write_text(
        f"""
[round]
corpus = "{corpus}"
agents = {json.dumps([str(a) for a in agents])}
tracks = ["skills"]
seed = "1f"
db = "round.db"
jobs = 2

[inference]
base_url = "{upstream.base_url}"
provider = "loopback"
model = "test-model"
key_env = "{key_env}"
"""
    )
    return config


def _everything_written(root: Path) -> list[Path]:
    """The store (with its WAL), reports and SSSAs the round left under `root`."""
    kept = (".db", ".db-wal", ".db-shm", ".json", ".html")
    return [p for p in root.rglob("*") if p.is_file() and p.name.endswith(kept)]


def test_a_round_meters_each_agent_apart_and_writes_the_key_nowhere(
    assay: Assay,
    tmp_path: Path,
    skills_pair: Path,
    upstream: FakeUpstream,
) -> None:
    twice = tmp_path / "twice.py"
    twice.write_text(TWICE)
    config = _round_toml(tmp_path, upstream, skills_pair, [EXAMPLE, twice])
    run = assay("round", "run", "--config", str(config), "--json", "--html", "report.html")
    result = json.loads(run.stdout)
    assert result["status"] == "completed", result["reason"]
    assert result["inference"]["upstream"]["model"] == "test-model"
    usage = {u["agent"]: u for u in result["inference"]["usage"]}
    reps = 2 * 3  # two tasks, three reps each
    hashes = {name: h for h, name in result["agents"].items()}
    assert usage[hashes["model_agent"]]["requests"] == reps
    assert usage[hashes["twice"]]["requests"] == 2 * reps
    assert len(upstream.seen) == 3 * reps
    assert all(s.authorization == f"Bearer {KEY}" for s in upstream.seen)

    # Stored per rep, with a digest per exchange.
    with sqlite3.connect(tmp_path / "round.db") as db:
        rows = [json.loads(r[0]) for r in db.execute("SELECT outcome_json FROM reps")]
    spent = sorted(len(r["inference"]["exchanges"]) for r in rows)
    assert spent == [1] * reps + [2] * reps

    report = assay("round", "report", result["round_id"], "--db", "round.db").stdout
    assert "inference" in report and "requests" in report
    html = (tmp_path / "report.html").read_text()
    assert 'id="inference"' in html and "test-model" in html
    assay("attest", "export", "--db", "round.db", result["round_id"], "--out", "sssa")
    sssa = json.loads(next((tmp_path / "sssa" / hashes["twice"][:16]).glob("*.json")).read_text())
    exchanges = [e for r in sssa["inference"] for e in r["exchanges"]]
    assert len(exchanges) == 2 * 3
    # What was asked and what the model said, byte for byte, beside the attestations.
    for digest in {e["request_sha256"] for e in exchanges} | {
        e["response_sha256"] for e in exchanges
    }:
        body = (tmp_path / "sssa" / "inference" / f"{digest}.json").read_bytes()
        assert hashlib.sha256(body).hexdigest() == digest
    asked = {json.loads((tmp_path / "sssa" / "inference" / f"{e['request_sha256']}.json")
             .read_bytes())["messages"][0]["content"] for e in exchanges}  # fmt: skip
    assert asked == {"first", "second"}

    written = _everything_written(tmp_path)
    assert any(p.suffix == ".db" for p in written) and any("sssa" in p.parts for p in written)
    leaks = [p for p in written if KEY.encode() in p.read_bytes()]
    assert leaks == []
    assert KEY not in run.stdout + run.stderr + report


def test_eval_shows_each_reps_usage(
    assay: Assay,
    tmp_path: Path,
    skills_pair: Path,
    upstream: FakeUpstream,
) -> None:
    config = _round_toml(tmp_path, upstream, skills_pair, [EXAMPLE])
    args = ("eval", str(EXAMPLE), "--track", "skills", "--corpus", str(skills_pair), "--reps", "1")
    # Exit 1 only says the agent is not eligible: the fake model says BLOCK to everything.
    run = assay(*args, "--config", str(config), "--json", check=False)
    assert run.returncode in (0, 1), run.stderr
    payload = json.loads(run.stdout)
    reps = [rep for task in payload["task_results"] for rep in task["reps"]]
    assert [rep["inference"]["requests"] for rep in reps] == [1] * len(reps)
    assert all(rep["inference"]["model"] == "test-model" for rep in reps)
    table = assay(*args, "--config", str(config), check=False).stdout
    assert "inference" in table and "requests" in table


def test_an_unset_key_stops_the_round_before_it_starts(
    assay: Assay, tmp_path: Path, skills_pair: Path, upstream: FakeUpstream
) -> None:
    config = _round_toml(tmp_path, upstream, skills_pair, [EXAMPLE], key_env="ASSAY_UNSET_KEY")
    run = assay("round", "run", "--config", str(config), check=False)
    assert run.returncode == 2
    assert "ASSAY_UNSET_KEY" in run.stderr and "not set" in run.stderr
    assert not (tmp_path / "round.db").exists()


def test_a_manifest_gets_the_model_it_names_when_the_round_allows_it(
    assay: Assay, tmp_path: Path, skills_pair: Path, upstream: FakeUpstream
) -> None:
    config = _round_toml(tmp_path, upstream, skills_pair, [])
    config.write_text(config.read_text() + 'models = ["alt-model"]\n')
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "agent.py").write_bytes(EXAMPLE.read_bytes())
    assay("keys", "new", "--out", str(tmp_path / "keys"), "--name", "alice")
    assay("agent", "pin", str(submission / "agent.py"), "--track", "skills",
          "--key", str(tmp_path / "keys" / "alice.key"), "--model", "alt-model")  # fmt: skip
    manifest = submission / "agent.skills.manifest.json"
    assert json.loads(manifest.read_text())["model"] == "alt-model"
    run = assay("round", "run", "--config", str(config), "--manifest", str(manifest), "--json")
    result = json.loads(run.stdout)
    assert result["status"] == "completed", result["reason"]
    assert list(result["inference"]["models"].values()) == ["alt-model"]
    assert {s.body["model"] for s in upstream.seen} == {"alt-model"}


def test_a_resumed_round_asks_the_model_only_for_the_reps_it_runs(
    assay: Assay, tmp_path: Path, skills_pair: Path, upstream: FakeUpstream
) -> None:
    config = _round_toml(tmp_path, upstream, skills_pair, [EXAMPLE])
    result = json.loads(assay("round", "run", "--config", str(config), "--json").stdout)
    asked = len(upstream.seen)
    with sqlite3.connect(tmp_path / "round.db") as db:  # as if killed before two reps ended
        db.execute("DELETE FROM reps WHERE rep = 2")
        db.execute("UPDATE rounds SET status = 'running'")
    resumed = assay("round", "resume", result["round_id"], "--db", "round.db", "--json")
    assert json.loads(resumed.stdout)["status"] == "completed"
    assert len(upstream.seen) == asked + 2  # two tasks' rep 2, nothing else


def test_a_round_budget_is_shared_by_its_reps_and_reports_show_cost(
    assay: Assay, tmp_path: Path, skills_pair: Path, upstream: FakeUpstream
) -> None:
    config = _round_toml(tmp_path, upstream, skills_pair, [EXAMPLE])
    config.write_text(
        config.read_text()
        + "round_tokens = 30000\n"  # six reps: 5,000 tokens each, under the mechanism's
        + "[inference.price]\nprompt = 1000000.0\ncompletion = 2000000.0\ncurrency = 'EUR'\n"
    )
    run = assay("round", "run", "--config", str(config), "--json", "--html", "report.html")
    result = json.loads(run.stdout)
    assert result["status"] == "completed", result["reason"]
    assert result["inference"]["upstream"]["rep_tokens"] == 5000
    assert all(s.body["max_tokens"] + len(s.raw) <= 5000 for s in upstream.seen)
    (usage,) = result["inference"]["usage"]
    # Six reps of one request, each billed 11 prompt and 7 completion tokens.
    assert usage["cost"] == f"{6 * (PROMPT_TOKENS * 1 + COMPLETION_TOKENS * 2):.4f} EUR"
    report = assay("round", "report", result["round_id"], "--db", "round.db").stdout
    assert "cost" in report and "EUR" in report
    assert usage["cost"] in (tmp_path / "report.html").read_text()


def test_a_round_table_may_not_set_each_reps_share(
    assay: Assay, tmp_path: Path, skills_pair: Path, upstream: FakeUpstream
) -> None:
    config = _round_toml(tmp_path, upstream, skills_pair, [EXAMPLE])
    config.write_text(config.read_text() + "rep_tokens = 10\n")
    run = assay("round", "run", "--config", str(config), check=False)
    assert run.returncode == 2 and "round_tokens" in run.stderr
