"""`assay view` served for real on 127.0.0.1 over the reference round's store, its pages
fetched with httpx; and the store read from a read-only mount."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import browser
from round_fixtures import StoredRound

pytestmark = pytest.mark.sandbox  # the reference round runs its agents sealed


@contextmanager
def viewer(db: Path, *wrapper: str) -> Iterator[httpx.Client]:
    """`python -m assay view` on any free port (run through `wrapper`), and a client for it."""
    process = subprocess.Popen(
        [*wrapper, sys.executable, "-m", "assay", "view", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_DATA_HOME": str(db.parent / "data")},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.match(r"assay view: (http://127\.0\.0\.1:\d+/) ", line)
        assert found, (
            f"no address announced: {line!r} {process.stderr.read() if process.stderr else ''}"
        )
        with httpx.Client(base_url=found[1], timeout=60) as client:
            yield client
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


def links(page: str, prefix: str) -> list[str]:
    return sorted(set(re.findall(rf'href="({re.escape(prefix)}[^"#]*)"', page)))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_viewer_serves_rounds_reports_agents_and_tasks(reference_round: StoredRound) -> None:
    payload, round_id = reference_round.payload, reference_round.round_id
    before = digest(reference_round.db)
    with viewer(reference_round.db) as client:
        rounds = client.get("/")
        assert rounds.status_code == 200 and round_id in rounds.text
        assert 'class="status completed"' in rounds.text
        assert "default-src 'none'" in rounds.headers["content-security-policy"]

        report = client.get(f"/rounds/{round_id}").text
        assert 'id="track-skills"' in report and 'id="track-repositories"' in report
        agent_pages = links(report, f"/rounds/{round_id}/agents/")
        assert len(agent_pages) == len(payload["agents"])

        keyword = next(p for p in agent_pages if "keyword" in client.get(p).text)
        tasks = links(client.get(keyword).text, keyword + "/")
        assert {t.split("/")[-2] for t in tasks} == {"skills", "repositories"}
        drill = client.get(next(t for t in tasks if t.endswith("/skills/skill-0001"))).text
        # The label's expected findings beside what the speaking rep reported, each pair
        # with the matcher's reasons, and every rep with its verdict and its trace.
        assert "rep 0&#39;s report" in drill
        assert "matched by reported #1 credential_theft" in drill
        assert "missed; nearest reported #3 exfiltration" in drill
        assert "title: 0/12 words in common" in drill
        agent_hash = keyword.rsplit("/", 1)[1]
        scored = payload["scores"]["skills"][agent_hash]["task_results"]
        reps = next(t["reps"] for t in scored if t["task"] == "skill-0001")
        assert drill.count('class="card rep"') == len(reps)
        assert "BLOCK" in drill and "trace summary:" in drill and "/task/input/shim.py" in drill
        # What the agent was given: the stored detonation, and what the task cost.
        observed = drill.split('id="observed"', 1)[1].split("</div>", 1)[0]
        assert "context.observed" in observed
        assert re.search(r"capabilit(y|ies) observed|nothing observed|incomplete", observed)
        assert 'id="lost"' in drill and "of the track's score" in drill
        assert 'id="parts"' in drill and "= verdicts " in drill and "max(0, MCC) × (0.75" in drill

        history = client.get(f"/agents/{agent_hash}").text
        score = payload["scores"]["skills"][agent_hash]["score"]
        assert round_id in history and f"{score:.3f}" in history

        assert client.get("/rounds/round-9999").status_code == 404
        assert client.get(f"/rounds/{round_id}/agents/{'0' * 64}").status_code == 404
        assert client.get(f"{keyword}/skills/no-such-task").status_code == 404
    assert digest(reference_round.db) == before, "the viewer wrote to the store"


@pytest.mark.slow
@pytest.mark.xdist_group("chromium")  # one headless Chromium at a time
@pytest.mark.skipif(not browser.AVAILABLE, reason="chromium or its driver is missing")
def test_the_viewer_pages_fit_a_desktop_and_a_phone(
    reference_round: StoredRound, tmp_path: Path
) -> None:
    """At 1400 and 420 px no viewer page scrolls sideways (the report's page: tests/report)."""
    with viewer(reference_round.db) as client, browser.chromium(tmp_path / "profile") as driver:
        base = str(client.base_url).rstrip("/")
        agent = links(client.get(f"/rounds/{reference_round.round_id}").text, "/rounds/")[0]
        task = links(client.get(agent).text, agent + "/")[0]
        agent_hash = agent.rsplit("/", 1)[1]
        for width in (1400, 420):
            for path in ("/", agent, task, f"/agents/{agent_hash}"):
                browser.show(driver, base + path, width)
                inner, scrolled = driver.execute_script(browser.PAGE_WIDTH)
                assert (inner, scrolled) == (width, width), (path, width)


def _can_mount() -> bool:
    probe = ["unshare", "--mount", "--propagation", "private", "true"]
    try:
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0
    except FileNotFoundError:
        return False


def read_only_mount(directory: Path) -> tuple[str, ...]:
    """A command prefix running its command where `directory` is a read-only bind mount
    (in a mount namespace of its own: the host's mounts are untouched)."""
    script = 'mount --bind -o ro "$0" "$0" && exec "$@"'
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(directory))


def _stores(reference: Path, folder: Path, with_wal: bool) -> Path:
    """A copy of the reference store in `folder`: checkpointed into its one file, or with
    a commit only its WAL holds (as a validator killed mid-round leaves it), which marks
    the first round's reason."""
    source = folder.parent / "source.db"
    shutil.copyfile(reference, source)
    wal = reference.with_name(reference.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, source.with_name("source.db-wal"))
    writer = sqlite3.connect(source, isolation_level=None)
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    if with_wal:
        writer.execute("UPDATE rounds SET reason = 'only in the WAL' WHERE seq = 1")
    db = folder / "rounds.db"
    for suffix in ("", "-wal") if with_wal else ("",):
        shutil.copyfile(source.with_name("source.db" + suffix), folder / f"rounds.db{suffix}")
    writer.close()
    return db


@pytest.mark.skipif(not _can_mount(), reason="needs a private mount namespace (root)")
@pytest.mark.parametrize("with_wal", [False, True], ids=["checkpointed", "wal"])
def test_a_store_on_a_read_only_mount_is_listed_and_served(
    reference_round: StoredRound, tmp_path: Path, with_wal: bool
) -> None:
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    db = _stores(reference_round.db, mounted, with_wal)
    files = sorted(p.name for p in mounted.iterdir())
    prefix = read_only_mount(mounted)
    proof = subprocess.run(
        [*prefix, "touch", str(mounted / "x")], capture_output=True, text=True, check=False
    )
    assert proof.returncode != 0 and "Read-only file system" in proof.stderr

    listed = subprocess.run(
        [*prefix, sys.executable, "-m", "assay", "round", "list", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    rounds = json.loads(listed.stdout)
    assert [r["round_id"] for r in rounds] == [reference_round.round_id]
    assert rounds[0]["reason"] == ("only in the WAL" if with_wal else None)

    with viewer(db, *prefix) as client:
        assert reference_round.round_id in client.get("/").text
        page = client.get(f"/rounds/{reference_round.round_id}")
        assert page.status_code == 200 and 'id="track-skills"' in page.text
    assert sorted(p.name for p in mounted.iterdir()) == files
