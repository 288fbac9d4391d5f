"""An agent submission manifest as data: what an author signs ("this code, for this
track") and a round's plan keeps. Signing and verifying are `assay.attest.manifest`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assay.mechanism.spec import Track

MANIFEST_FORMAT = "assay-agent-manifest/1"
# `agent_file` only locates the code (whose identity is its hash); the signature signs the rest.
_UNSIGNED = frozenset({"agent_file", "signature"})


class AgentManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["assay-agent-manifest/1"]
    agent_file: str
    track: Track
    code_sha256: str
    entrypoint: str
    sandbox_digest: str
    author_key: str
    issued_at: str
    signature: str
    # The model the agent wants from the round's upstream; a validator serves it when its
    # round allows that model, and its own model otherwise. Absent from manifests that
    # name none, so their signatures stay what they were.
    model: str | None = None

    def signed_fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude=set(_UNSIGNED), exclude_none=True)

    @property
    def slot(self) -> tuple[str, Track]:
        """One author key holds one active agent per track."""
        return (self.author_key, self.track)

    def agent_path(self, manifest_path: Path) -> Path:
        return manifest_path.parent / self.agent_file
