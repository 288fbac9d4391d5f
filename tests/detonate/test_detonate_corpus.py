"""Detonating the bundled corpus: labels' capabilities seen, benign samples quiet,
evasive samples caught under the profile that triggers them, the host untouched."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from assay.corpus.interface import Task
from assay.corpus.native import NativeCorpus
from assay.detonate.core import relevance
from assay.detonate.steps import go_release, go_toolchain
from assay.mechanism.spec import BEHAVIOURAL_TRACKS
from assay.records import codec
from assay.records.observed import Observed

# Each test detonates the samples it reads through the run's detonation cache (see
# tests/conftest.py), so every sample is detonated once per run, by whichever worker asks
# first, as a validator's rounds of one day share detonations.
# Packages are installed by the real pip and npm in every profile: on a busy 2-core host
# a detonation takes minutes (the steps are bounded by CPU, not wall time).
pytestmark = [pytest.mark.sandbox, pytest.mark.timeout(1200)]

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
# The samples this suite was written for (their detonation is pinned below), and the
# samples the suite's rounds detonate anyway (tests/conftest.py's `copy_tasks` picks the
# first of each label; through the shared cache they cost nothing more here). The rest of
# the bundled corpus is detonated by rounds and the demo: a Python package alone costs
# ~13 s of CPU (five real pip installs), so the benign packages here are one of each
# shape (setup.py, pyproject) plus the rounds' own, not all of them.
WRITTEN_FOR = frozenset(
    (
        "mcp_servers/mcp-0001",
        "mcp_servers/mcp-0008",
        "mcp_servers/mcp-0009",
        "mcp_servers/mcp-0010",
        "mcp_servers/mcp-0012",
        "mcp_servers/mcp-0016",
        "mcp_servers/mcp-0018",
        "mcp_servers/mcp-0022",
        "mcp_servers/mcp-0026",
        "mcp_servers/mcp-0028",
        "mcp_servers/mcp-0031",
        "mcp_servers/mcp-0032",
        "mcp_servers/mcp-0037",
        "mcp_servers/mcp-0038",
        "packages/pkg-0002",
        "packages/pkg-0004",
        "packages/pkg-0005",
        "packages/pkg-0008",
        "packages/pkg-0009",
        "packages/pkg-0010",
        "packages/pkg-0011",
        "packages/pkg-0013",
        "packages/pkg-0014",
        "packages/pkg-0015",
        "packages/pkg-0016",
        "packages/pkg-0024",
        "packages/pkg-0039",
        "skills/skill-0001",
        "skills/skill-0003",
        "skills/skill-0006",
        "skills/skill-0008",
        "skills/skill-0017",
        "skills/skill-0018",
        "skills/skill-0019",
        "skills/skill-0020",
        "skills/skill-0023",
        "skills/skill-0024",
        "skills/skill-0028",
        "skills/skill-0032",
        "skills/skill-0033",
        "skills/skill-0034",
        "skills/skill-0037",
    )
)
TASKS: list[Task] = [
    t
    for track in BEHAVIOURAL_TRACKS
    for t in NativeCorpus(CORPUS).tasks(track)
    if f"{track.value}/{t.task_id}" in WRITTEN_FOR
]
Detonated = Callable[[str], Observed]  # the `detonations` fixture (tests/detonate/conftest.py)


def _id(task: Task) -> str:
    return f"{task.track.value}/{task.task_id}"


def _names(result: Observed) -> set[str]:
    return {c.capability for c in result.capabilities}


@pytest.mark.parametrize("task", [t for t in TASKS if t.malicious], ids=_id)
def test_malicious_sample_shows_its_labelled_capabilities(
    task: Task, detonations: Detonated
) -> None:
    result = detonations(_id(task))
    assert set(task.expected_capabilities) <= _names(result), codec.to_builtins(result.profiles)


@pytest.mark.parametrize("task", [t for t in TASKS if not t.malicious], ids=_id)
def test_benign_sample_shows_nothing_system_or_redact(task: Task, detonations: Detonated) -> None:
    result = detonations(_id(task))
    severe = [c for c in result.capabilities if c.protection in ("system", "redact")]
    # The evidence (a watch event's detail names its inotify flags) says what was seen.
    assert severe == [], codec.to_builtins(result.capabilities)


# Environment-keyed samples: what fires, and only under which profile.
ENV_KEYED = {
    "skills/skill-0020": "READ_ENV_SECRET",  # CI-keyed test runner
    "mcp_servers/mcp-0031": "READ_ENV_SECRET",  # CI-keyed status server
    "packages/pkg-0005": "READ_ENV_SECRET",  # CI-keyed dependency confusion
}
# Time bombs: what fires from which date. Which profiles reach the date depends on
# the real clock, so the expectation is computed from it.
TIME_BOMBS = {
    "skills/skill-0037": ("WRITE_SHELL_PROFILE", datetime.date(2026, 12, 15)),  # log rotation
    "packages/pkg-0016": ("WRITE_SHELL_PROFILE", datetime.date(2026, 12, 20)),  # JSON helper
    "mcp_servers/mcp-0037": ("READ_CLOUD_CREDENTIALS", datetime.date(2027, 1, 1)),  # S3 browser
}
CLOCK_PROFILES = {"baseline": 0, "clock_plus_5w": 35, "clock_plus_13mo": 400}


def _profiles_showing(result: Observed, capability: str) -> set[str]:
    return next((set(c.profiles) for c in result.capabilities if c.capability == capability), set())


@pytest.mark.parametrize("task_id", sorted(ENV_KEYED))
def test_environment_keyed_sample_fires_only_under_ci(task_id: str, detonations: Detonated) -> None:
    result = detonations(task_id)
    assert _profiles_showing(result, ENV_KEYED[task_id]) == {"ci"}
    assert result.gated[ENV_KEYED[task_id]] == ("ci",)


@pytest.mark.parametrize("task_id", sorted(TIME_BOMBS))
def test_time_bomb_fires_under_the_shifted_clocks_that_reach_its_date(
    task_id: str, detonations: Detonated
) -> None:
    capability, armed = TIME_BOMBS[task_id]
    today = datetime.date.today()
    reached = {p for p, days in CLOCK_PROFILES.items() if today + datetime.timedelta(days) >= armed}
    seen = _profiles_showing(detonations(task_id), capability) & set(CLOCK_PROFILES)
    assert seen == reached


def test_trigger_flag_is_attributed_to_the_invocation_that_carries_it(
    detonations: Detonated,
) -> None:
    result = detonations("skills/skill-0034")  # the PDF tool gated on --fast
    baseline = next(p for p in result.profiles if p.name == "baseline")
    assert any("--fast" in step.argv for step in baseline.steps)
    assert "READ_CLOUD_CREDENTIALS" in baseline.capabilities


def test_home_keyed_sample_reads_the_planted_key(detonations: Detonated) -> None:
    result = detonations("skills/skill-0028")  # keyed on ~/.ssh/id_rsa existing
    ssh = next(c for c in result.capabilities if c.capability == "READ_SSH_KEY")
    assert any(e.path == "~/.ssh/id_rsa" for e in ssh.evidence)
    schedule = next(c for c in result.capabilities if c.capability == "SCHEDULE_JOB")
    assert any(e.path.startswith("~/.config/systemd/user/") for e in schedule.evidence)


def _rank(kind: str, event: str) -> tuple[int, str]:
    return relevance(kind, event), event


@pytest.mark.parametrize("task", TASKS, ids=_id)
def test_output_is_json_bounded_and_sorted(task: Task, detonations: Detonated) -> None:
    data: dict[str, Any] = codec.to_builtins(detonations(_id(task)))
    assert len(json.dumps(data)) < 96 * 1024
    names = [c["capability"] for c in data["capabilities"]]
    assert names == sorted(names)
    for kind, events in data["events"].items():
        assert events == sorted(events, key=partial(_rank, kind)), kind
    for capability in data["capabilities"]:
        assert capability["protection"] in ("normal", "dangerous", "system", "redact")
        assert capability["evidence"]


def test_canary_values_never_reach_the_output(detonations: Detonated) -> None:
    # The values are per-detonation secrets; agents see names and paths, never values.
    result = detonations("skills/skill-0020")
    assert "ghp_" not in json.dumps(codec.to_builtins(result.capabilities))


def test_mcp_calls_carry_what_each_tool_was_seen_doing(
    detonations: Detonated,
) -> None:
    result = detonations("mcp_servers/mcp-0009")  # link preview stealing git credentials
    assert result.mcp is not None
    (tool,) = result.mcp.tools
    assert tool.name == "preview" and tool.parameters == ("url",)
    call, *again = result.mcp.calls["baseline"]
    assert call.outcome == "ok" and [c.variation for c in again] == ['"repeat 2"', '"repeat 3"']
    assert {"EXFILTRATE_DATA", "READ_SECRET"} <= set(call.observed)


@pytest.mark.parametrize("task", TASKS, ids=_id)
def test_every_detonation_is_complete(task: Task, detonations: Detonated) -> None:
    """Everything each sample documents or declares was exercised, nothing disturbed."""
    assert detonations(_id(task)).interference == ()


# The bundled Go servers import an SDK module they do not ship, and a detonation builds
# offline (no module proxy is reached, here or in CI), with a toolchain older than the
# Go their go.mod asks for (Debian 12's 1.19): incomplete, saying so, never silent.
UNBUILT_GO = ("mcp-0002", "mcp-0017", "mcp-0024", "mcp-0027")


@pytest.mark.parametrize("task_id", UNBUILT_GO)
def test_go_sample_without_its_sdk_is_incomplete_and_says_why(
    task_id: str, detonations: Detonated
) -> None:
    result = detonations(f"mcp_servers/{task_id}")  # incomplete: never kept, detonated here
    assert not result.complete and result.profiles == ()
    (reason,) = result.interference
    go = go_toolchain()
    assert go is not None, "scripts/install-system-tools.sh installs golang-go"
    assert reason.startswith("Go server not built: needs modules github.com/"), reason
    release = go_release(go)
    assert release is not None
    if release < (1, 22):
        assert reason.endswith(f"go.mod asks for Go 1.22, the toolchain is Go 1.{release[1]}")
