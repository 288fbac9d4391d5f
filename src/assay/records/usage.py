"""What a rep spent on inference, stored with the rep (`RunOutcome.inference`).

Diagnostic like CPU seconds: shown beside the scores, never part of them. Each
exchange is recorded by the SHA-256 of the request body the upstream received
and of the response body the agent received, so an attestation states exactly
what was asked and what the model said.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Exchange(BaseModel):
    model_config = ConfigDict(frozen=True)

    seq: int  # order in which the proxy admitted the request
    status: int  # HTTP status the agent received
    request_sha256: str
    response_sha256: str | None = None  # None when the upstream gave no answer
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False  # the upstream reported no usage: counted as bytes / 4
    upstream_s: float = 0.0


class InferenceUsage(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    requests: int = 0  # forwarded upstream (each counts against the request budget)
    refused: int = 0  # answered 429: over the request or token budget
    rejected: int = 0  # answered 4xx without forwarding: bad route, auth, body
    errors: int = 0  # forwarded, but the upstream failed (502) or timed out (504)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False  # some tokens were counted, not reported by the upstream
    upstream_s: float = 0.0  # wall time with at least one request upstream
    wall_extension_s: float = 0.0  # how much the rep's wall backstop grew (capped)
    exchanges: tuple[Exchange, ...] = ()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def summary(self) -> dict[str, object]:
        """Everything but the per-exchange digests (reports show these)."""
        return self.model_dump(mode="json", exclude={"exchanges"})


class Body(BaseModel):
    """One request or response body the proxy carried, kept by its SHA-256 (UTF-8 JSON text)."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    text: str
