"""What a rep spent on inference, stored with the rep (`RunOutcome.inference`).

Diagnostic like CPU seconds: shown beside the scores, never part of them. Each
exchange is recorded by the SHA-256 of the request body the upstream received
and of the response body the agent received, so an attestation states exactly
what was asked and what the model said. One record serves the proxy's meter,
the stored outcome, the rep record (without its exchanges) and the reports.
"""

from __future__ import annotations

import msgspec


class Exchange(msgspec.Struct, frozen=True, kw_only=True):
    seq: int  # order in which the proxy admitted the request
    status: int  # HTTP status the agent received (499: the rep ended with it upstream)
    request_sha256: str
    response_sha256: str | None = None  # None when the upstream gave no answer
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Not the upstream's report: counted as bytes / 4, or the whole reservation where the
    # bill is unknown (docs/inference.md).
    estimated: bool = False
    upstream_s: float = 0.0


class InferenceUsage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    provider: str
    model: str
    # Forwarded upstream. These, `refused` and `rejected` all count against the request budget.
    requests: int = 0
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

    def summary(self) -> InferenceUsage:
        """The counts without the per-exchange digests (what rep records and reports show)."""
        return msgspec.structs.replace(self, exchanges=())


class Body(msgspec.Struct, frozen=True):
    """One request or response body the proxy carried, kept by its SHA-256 (UTF-8 JSON text)."""

    sha256: str
    text: str
