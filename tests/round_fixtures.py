"""The reference round's definition, shared by tests/conftest.py and the tests that use it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# The reference round: the agents and corpus of tests/validator/test_round.py.
REFERENCE_AGENTS = (ROOT / "agents" / "keyword.py", ROOT / "agents" / "block_all.py")
REFERENCE_SEED = "5eed"
REFERENCE_TRACKS = "skills,repositories"
# Its reps: 2 agents x (2 skills tasks x 3 reps + 2 repositories tasks x 2 reps).
REFERENCE_REPS = 20


def reference_round_args(corpus: Path, db: Path, *extra: str) -> list[str]:
    """`assay round run` of the reference round over `corpus` into `db`."""
    args = ["round", "run", "--corpus", str(corpus), "--db", str(db), "--seed", REFERENCE_SEED]
    for agent in REFERENCE_AGENTS:
        args += ["--agent", str(agent)]
    return [*args, "--tracks", REFERENCE_TRACKS, *extra]


@dataclass(frozen=True)
class StoredRound:
    """A completed round: its store (with the artifact snapshots beside it) and its JSON."""

    db: Path
    payload: dict[str, Any]

    @property
    def round_id(self) -> str:
        return str(self.payload["round_id"])
