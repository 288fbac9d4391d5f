"""An agent as submitted: its code, identified everywhere by the SHA-256 of its bytes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

DEFAULT_ENTRYPOINT = "agent_main"


def short_hash(agent_hash: str) -> str:
    """An agent id as people read it: enough of the hash to tell agents apart."""
    return agent_hash[:12]


class AgentError(ValueError):
    """An agent file that cannot be read."""


@dataclass(frozen=True)
class Agent:
    code: bytes
    entrypoint: str = DEFAULT_ENTRYPOINT
    name: str = "agent"

    @cached_property
    def agent_hash(self) -> str:
        return hashlib.sha256(self.code).hexdigest()

    @property
    def filename(self) -> str:
        """The file as its author submitted it: what tracebacks and syntax errors name."""
        return f"{self.name}.py"

    @classmethod
    def load(cls, path: Path, entrypoint: str = DEFAULT_ENTRYPOINT) -> Agent:
        """Pin an agent file by its bytes (the size cap is a gate at run time)."""
        try:
            code = path.read_bytes()
        except OSError as exc:
            raise AgentError(f"agent {path}: {exc.strerror}") from exc
        return cls(code, entrypoint, path.stem)
