"""`context.observed` as a real agent reads it inside the sandbox: the stored
detonation, with the keys Phylax agents read, byte for byte what it was before
`Observed` was a model (`tests/detonate/golden_observed.json`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.mechanism.spec import Track
from assay.records import codec
from assay.records.observed import Observed
from assay.records.outcome import RunOutcome, RunStatus

pytestmark = pytest.mark.sandbox

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "detonate" / "golden_observed.json").read_text()
)
# Hashes what it was given, sorted, into its verdict's summary.
ECHO = """
import hashlib

def agent_main(context):
    thread_probe(context)
    seen = json.dumps(context["observed"], sort_keys=True).encode()
    r = report()
    r["verdict"]["summary"] = hashlib.sha256(seen).hexdigest()
    return r
"""


@pytest.mark.parametrize("key", ["mcp_servers/mcp-0037", "packages/pkg-0013"])
def test_the_agent_reads_the_stored_detonation_unchanged(
    run_agent: Callable[..., RunOutcome], key: str
) -> None:
    golden = GOLDEN[key]
    observed = codec.decode(json.dumps(golden["stored"]), Observed)
    # The rep's own track only shapes the report it must return, not what it is given.
    outcome = run_agent(ECHO, track=Track.SKILLS, observed=observed)
    assert outcome.status is RunStatus.COMPLETED, outcome.detail
    assert outcome.report is not None
    expected = json.dumps(golden["agent"], sort_keys=True).encode()
    assert outcome.report.verdict.summary == hashlib.sha256(expected).hexdigest()
