"""Every failed rep explains itself in `assay eval`: the detail a user can act on."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

Assay = Callable[..., subprocess.CompletedProcess[str]]
EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "minimal_agent.py").read_text()

AGENTS = {
    "syntax_error": "def agent_main(context):\n    return {\n",
    "raises": "def agent_main(context):\n    return {}['no-such-key-7']\n",
    # Raised inside the standard library: the detail names the agent's own line that called it.
    "raises_below": (
        "import json\n\n\ndef parse(text):\n    return json.loads(text)\n\n\n"
        "def agent_main(context):\n    return parse('not json')\n"
    ),
    "raises_on_load": "import os\n\nTOKEN = os.environ['NO_SUCH_VARIABLE_9']\n",
    "malformed": EXAMPLE.replace(
        'evidence = {\n        "action_plane"', 'evidence = {\n        "no_plane"'
    ).replace('"context_plane": {', '"context_plane_": {'),
    "skips_probe": EXAMPLE.replace("    run_probe(context)\n", ""),
}
EXPECTED = {
    "syntax_error": (
        "agent_invalid",
        "agent does not compile: '{' was never closed (syntax_error.py, line 2)",
    ),
    "raises": (
        "crash",
        "agent raised: KeyError: 'no-such-key-7' (raises.py, line 2, in agent_main)",
    ),
    "raises_below": (
        "crash",
        "agent raised: JSONDecodeError: Expecting value: line 1 column 1 (char 0) "
        "(raises_below.py, line 5, in parse)",
    ),
    "raises_on_load": (
        "crash",
        "agent raised while loading: KeyError: 'NO_SUCH_VARIABLE_9' "
        "(raises_on_load.py, line 3, in <module>)",
    ),
    "malformed": ("malformed_report", "evidence.context_plane: Field required"),
    "skips_probe": ("probe_missing", "probe file: missing; no DNS query for the probe host"),
}


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_eval_prints_what_went_wrong(
    assay: Assay, skills_pair: Path, tmp_path: Path, kind: str
) -> None:
    agent = tmp_path / f"{kind}.py"
    agent.write_text(AGENTS[kind])
    args = ("eval", str(agent), "--track", "skills", "--corpus", str(skills_pair), "--reps", "1")
    json_run = assay(*args, "--json", check=False)
    assert json_run.returncode == 1, "every rep failed: the result fails the bar"
    payload = json.loads(json_run.stdout)
    reason, detail = EXPECTED[kind]
    for task in payload["task_results"]:
        (rep,) = task["reps"]
        assert rep["status"] == "failed" and rep["reason"] == reason
        assert detail in rep["detail"]
        assert rep["cpu_budget_s"] == 8.0
    table = assay(*args, check=False).stdout
    assert reason in table and detail.split(":")[0] in table
