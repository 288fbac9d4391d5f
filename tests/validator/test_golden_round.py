"""The same seed, corpus, agents and secret give byte-identical round JSON, today and
after any refactor: `golden/round.json` was produced by the code before the change.

The corpus and agents are frozen in `golden/inputs.tar.gz` (copies of bundled ones as
they were), so growing the bundled corpus or improving an agent does not move the golden.

A deliberate change of results (a new mechanism version, a new field) regenerates it:
`PYTHONPATH=tests python tests/validator/test_golden_round.py` rewrites the file; review
the diff.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from inprocess_cli import run_cli

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
AGENTS = ("allow_all", "coin_flip", "keyword")
SEED = "901d"


def run_golden_round(work: Path) -> bytes:
    """`assay round run --json` over the frozen corpus and agents, in a fresh store."""
    with tarfile.open(GOLDEN / "inputs.tar.gz") as inputs:
        inputs.extractall(work, filter="data")
    secret = work / "validator.secret"
    shutil.copyfile(GOLDEN / "validator.secret", secret)
    secret.chmod(0o600)
    agents = [arg for name in AGENTS for arg in ("--agent", str(work / "agents" / f"{name}.py"))]
    result = run_cli(
        [
            "round",
            "run",
            "--json",
            "--corpus",
            str(work / "corpus"),
            *agents,
            "--seed",
            SEED,
            "--db",
            str(work / "golden.db"),
            "--secret-file",
            str(secret),
            "--jobs",
            "2",
        ],
        env={"XDG_DATA_HOME": str(work / "data")},
        cwd=work,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.encode()


@pytest.mark.sandbox
@pytest.mark.slow
def test_round_json_is_byte_identical_to_the_golden_round(tmp_path: Path) -> None:
    produced = run_golden_round(tmp_path)
    assert produced == (GOLDEN / "round.json").read_bytes()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (GOLDEN / "round.json").write_bytes(run_golden_round(Path(tmp)))
