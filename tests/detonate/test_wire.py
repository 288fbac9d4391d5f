"""The plan and the log across the sandbox wall: what one side writes, the other reads
back whole; any log that is not one is a disturbed run, never an exception."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from assay.detonate.canaries import make_canaries, make_disguise
from assay.detonate.core import DEFAULT_BUDGET, DEFAULT_OBSERVER, _Setup, read_log
from assay.detonate.harness import fit_log
from assay.detonate.steps import PROFILES, build_plan, find_libfaketime
from assay.detonate.wire import (
    PLAN_FILE,
    CanaryHit,
    Egress,
    HarnessLog,
    HarnessPlan,
    McpCall,
    McpLog,
    McpSessionEnd,
    McpTool,
    PlannedStep,
    StepLog,
    WireError,
)
from assay.mechanism.spec import Track
from assay.sandbox.bwrap import BwrapBackend

MCP_ARTIFACT = {
    "mcp.json": '{"command": "python3", "args": ["server.py"], "env": {"MODE": "x"}}',
    "server.py": "print('hi')\n",
}
SESSION = McpSessionEnd(
    crashed=False, exit=0, malformed_lines=2, flooded=False, tools_changed=1, stdout_bytes=900
)
HIT = CanaryHit("env:NPM_TOKEN", "/home/dev/.cache/x")
SENT = Egress("203.0.113.7:80", 120, "POST", "POST /c HTTP/1.1", ("aws_credentials",))
TOOL = McpTool("lookup", "Look a word up.", {"type": "object", "properties": {"word": {}}})
PLAN = HarnessPlan(
    stage="/tmp/tmpabc",
    planted=("/home/dev/.netrc",),
    dirs=("/home/dev",),
    placeholders={"/workspaces/project/notes.md": "# Notes\n"},
    copies=(),
    links={},
    user_site="/home/dev/.local/lib/python3.11/site-packages",
    site_paths=(),
    scan_roots=("/tmp",),
    scan_skip=("/tmp/tmpabc",),
    needles={"netrc": ("machine x",)},
    env={"HOME": "/home/dev"},
    steps=(PlannedStep("run.py", ("/usr/bin/python3", "run.py"), "/workspaces/project", 3),),
    deadline_s=9,
    log_cap=1 << 20,
)
LOG = HarnessLog(
    steps=(
        StepLog("run.py", 0, False, 12, "warning\n", canary_hits=(HIT,), started=812.5),
        StepLog("hang.py", None, True, 0),
        StepLog("missing", error="FileNotFoundError: [Errno 2] No such file"),
        StepLog(
            "mcp session",
            mcp=McpLog(
                initialize="ok",
                session=SESSION,
                tools=(TOOL,),
                calls=(McpCall("lookup", "ok", (HIT,), (SENT,)), McpCall("sync", "skipped: x")),
                list_failure="timeout",
                changed_tools=(McpTool("sync", "", {}),),
            ),
        ),
    ),
    skipped=("late",),
    errors=("copying the artifact failed: OSError",),
    elapsed_s=3.25,
    layout_done_ns=1_733_300_000_123_456_789,
)


def _shipped_plan(artifact: Path, track: Track, backend: BwrapBackend) -> dict[str, object]:
    """The plan document exactly as one profile's request carries it into the sandbox."""
    seed = b"wire-test"
    setup = _Setup(
        artifact_dir=artifact,
        plan=build_plan(artifact, track, seed.hex()[:16]),
        canaries=make_canaries(seed),
        disguise=make_disguise(seed),
        token=seed.hex()[:16],
        backend=backend,
        budget=DEFAULT_BUDGET,
        libfaketime=find_libfaketime(),
        observer=DEFAULT_OBSERVER,
    )
    request = setup.request(PROFILES[-1])  # a shifted clock: the fullest environment
    names = [f.name for f in request.inputs]
    assert names == ["harness.py", "wire.py", PLAN_FILE]
    assert request.argv[-1] == f"{request.input_dir}/harness.py"
    assert request.input_dir.startswith("/tmp/tmp") and "assay" not in request.input_dir
    (plan,) = [f for f in request.inputs if f.name == PLAN_FILE]
    data: dict[str, object] = json.loads(plan.data)
    return data


@pytest.mark.sandbox
def test_the_plan_the_harness_reads_is_the_plan_written(
    tmp_path: Path, backend: BwrapBackend
) -> None:
    for name, text in MCP_ARTIFACT.items():
        (tmp_path / name).write_text(text)
    shipped = _shipped_plan(tmp_path, Track.MCP_SERVERS, backend)
    plan = HarnessPlan.from_json(shipped)
    assert plan.to_json() == shipped
    (step,) = plan.steps
    assert step.mcp is not None and step.env == {"MODE": "x"}
    assert "/home/dev/.ssh/id_rsa" in plan.planted  # canaries, the validator's to plant


def test_the_log_the_validator_reads_is_the_log_written() -> None:
    assert read_log(fit_log(LOG, 1 << 20)) == (LOG, "")
    assert HarnessPlan.from_json(json.loads(json.dumps(PLAN.to_json()))) == PLAN


def test_a_log_cut_to_its_cap_still_reads() -> None:
    many = StepLog("s", stderr_tail="e" * 2000, canary_hits=(HIT,) * 100, egress=(SENT,) * 64)
    log = HarnessLog(steps=(many,) * 40)
    read, unreadable = read_log(fit_log(log, 64 * 1024))
    assert unreadable == "" and read.truncated
    assert len(read.steps) == 40 and len(read.steps[0].canary_hits) <= 16
    # Cut to nothing but its summary, it still says when the harness's layout was done.
    smallest, _ = read_log(fit_log(replace(log, layout_done_ns=7), 4096))
    assert smallest.steps == () and smallest.layout_done_ns == 7


def _mutated(path: tuple[str | int, ...], value: object) -> bytes:
    data = json.loads(fit_log(LOG, 1 << 20))
    where = data
    for key in path[:-1]:
        where = where[key]
    if value is KeyError:
        del where[path[-1]]
    else:
        where[path[-1]] = value
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "no harness log: the harness was killed or crashed"),
        (b"[]", "harness log unreadable: HarnessLog: not an object"),
        (b'{"steps": [', "harness log unreadable"),
        (b"[" * 100 + b"]" * 100, "harness log unreadable"),
        (_mutated(("steps",), {}), "harness log unreadable: HarnessLog.steps: not a list"),
        (_mutated(("steps", 0, "exit"), True), "HarnessLog.steps[0].exit: not an integer"),
        (_mutated(("steps", 0, "exit"), "0"), "steps[0].exit: not an integer"),
        (_mutated(("steps", 1, "timed_out"), 1), "steps[1].timed_out: not a boolean"),
        (_mutated(("steps", 1, "name"), KeyError), "steps[1].name: missing"),
        (_mutated(("steps", 0, "canary_hits", 0, "path"), None), "canary_hits[0].path"),
        (_mutated(("steps", 3, "mcp", "calls", 0, "egress", 0, "canaries"), "aws"), "not a list"),
        (_mutated(("steps", 3, "mcp", "calls", 0, "egress", 0, "canaries", 0), 7), "not a string"),
        (_mutated(("steps", 3, "mcp", "session"), None), "mcp.session: not an object"),
        (_mutated(("steps", 3, "mcp", "tools", 0, "input_schema"), []), "input_schema"),
        (_mutated(("steps", 3, "mcp", "calls", 0), "ok"), "mcp.calls[0]: not an object"),
        (_mutated(("steps", 0, "started"), "1"), "HarnessLog.steps[0].started: not a number"),
        (_mutated(("elapsed_s",), "3"), "HarnessLog.elapsed_s: not a number"),
        (_mutated(("skipped",), KeyError), "HarnessLog.skipped: missing"),
    ],
    ids=lambda v: "" if isinstance(v, bytes) else v[:40],
)
def test_a_log_that_is_not_one_is_read_as_a_disturbed_run(data: bytes, why: str) -> None:
    log, unreadable = read_log(data)
    assert log == HarnessLog()
    assert why in unreadable


def test_every_wire_error_names_where() -> None:
    with pytest.raises(WireError, match=r"^HarnessLog\.steps\[0\]\.name: not a string$"):
        HarnessLog.from_json({**LOG.to_json(), "steps": [{**LOG.steps[0].to_json(), "name": 7}]})
    with pytest.raises(WireError, match=r"^HarnessPlan\.planted\[0\]: not a string$"):
        HarnessPlan.from_json({**PLAN.to_json(), "planted": [7]})
