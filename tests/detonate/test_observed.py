"""`Observed` through the store and into the agent's context: what agents read is
byte for byte what they read before the model existed.

`golden_observed.json` holds six bundled tasks detonated with the seed `bytes(range(16))` by the
code before `Observed` (stored form: `Detonation.to_json()` as the store wrote it;
agent view: `context.observed` built from it), CPU and wall seconds included.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.detonate import Detonation
from assay.mechanism.spec import Track
from assay.records import codec
from assay.records.observed import Observed
from assay.records.plan import RoundPlan
from assay.runner.context import agent_observed
from assay.store.sqlite import Store, StoreError

GOLDEN: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).with_name("golden_observed.json")).read_text()
)


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def without_run_figures(value: object) -> object:
    """CPU and wall seconds differ from run to run, and so does how many bytes an MCP
    server wrote (what it answers may carry the planted secrets it read, whose values
    are seeded per detonation); everything else must not."""
    data = json.loads(json.dumps(value))
    for key in ("profiles", "capability_evidence"):
        for item in data.get(key, ()):
            item.pop("cpu_s", None)
            item.pop("wall_s", None)
    for session in (data.get("mcp") or {}).get("sessions", {}).values():
        session.pop("stdout_bytes", None)
    return data


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "rounds.db")
    s.create_round("r1", RoundPlan("seed", "validator", "1", "d", "corpus", {}, (), ()), [])
    return s


@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_a_stored_observation_reaches_the_agent_byte_identical(store: Store, key: str) -> None:
    old = GOLDEN[key]
    observed = codec.decode(canonical(old["stored"]), Observed)
    assert canonical(codec.to_builtins(observed)) == canonical(old["stored"])
    track, task_id = key.split("/")
    store.put_observed("r1", track, task_id, observed)
    (read,) = store.observed("r1").values()
    assert read == observed
    assert canonical(agent_observed(read)) == canonical(old["agent"])


@pytest.mark.sandbox
@pytest.mark.parametrize("key", sorted(GOLDEN))
def test_detonating_the_bundled_tasks_gives_what_the_old_code_gave(
    key: str, detonations: Callable[[str], Observed]
) -> None:
    # The day's detonation (tests/detonate/conftest.py), whatever its seed: what is stored
    # and what agents read name the canaries, never their seeded values, so the golden
    # (made with one seed) holds for every seed.
    old = GOLDEN[key]
    observed = detonations(key)
    assert without_run_figures(codec.to_builtins(observed)) == without_run_figures(old["stored"])
    assert canonical(without_run_figures(agent_observed(observed))) == canonical(
        without_run_figures(old["agent"])
    )


def test_a_failed_detonation_is_an_incomplete_observation(store: Store) -> None:
    failed = Detonation.failed(Track.SKILLS, "detonation failed: OSError: boom").observed()
    assert not failed.complete and failed.interference == ("detonation failed: OSError: boom",)
    store.put_observed("r1", "skills", "t", failed)
    view = agent_observed(store.observed("r1")[("skills", "t")])
    assert view is not None
    assert view["events"] == {} and view["capabilities"] == [] and view["phases"] == {}
    assert "mcp" not in view


def test_complete_holds_exactly_when_nothing_interfered() -> None:
    data = GOLDEN["skills/skill-0037"]["stored"]
    with pytest.raises(codec.DecodeError, match="complete"):
        codec.convert({**data, "complete": False}, Observed)
    with pytest.raises(codec.DecodeError, match="complete"):
        codec.convert({**data, "interference": ["harness log unreadable"]}, Observed)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"track": "skills"}',
        canonical({**GOLDEN["skills/skill-0037"]["stored"], "track": "nonsense"}),
        canonical({**GOLDEN["skills/skill-0037"]["stored"], "events": {"secrets": []}}),
        canonical({**GOLDEN["skills/skill-0037"]["stored"], "extra": 1}),
    ],
    ids=["not-json", "list", "partial", "bad-track", "bad-event-kind", "extra-key"],
)
def test_a_stored_row_that_is_not_an_observation_is_a_store_fault(
    store: Store, tmp_path: Path, text: str
) -> None:
    with sqlite3.connect(tmp_path / "rounds.db") as db:
        db.execute("INSERT INTO observed VALUES ('r1', 'skills', 'skill-0037', ?)", (text,))
    with pytest.raises(StoreError, match=r"stored observation of skills/skill-0037 .* unreadable"):
        store.observed("r1")


def test_no_observation_gives_no_context_key() -> None:
    assert agent_observed(None) is None
