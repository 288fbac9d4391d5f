"""The `[inference]` table of round.toml: which OpenAI-compatible upstream serves the agents.

Recorded with a round's plan (never with a key: the table only names the
environment variable that holds it; `assay.inference.config` reads it).
"""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay.mechanism.spec import InferenceBudget


class InferenceConfigError(ValueError):
    """The `[inference]` table is invalid, or its key variable is unset; the message names it."""


class Price(BaseModel):
    """What the upstream charges, per million tokens: reports show each agent's cost."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)
    currency: str = Field(default="USD", min_length=1, max_length=8)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6

    def text(self, prompt_tokens: int, completion_tokens: int) -> str:
        return f"{self.cost(prompt_tokens, completion_tokens):.4f} {self.currency}"


class InferenceConfig(BaseModel):
    """An OpenAI-compatible upstream: a hosted provider or a local llama.cpp/vLLM/Ollama server."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(min_length=1)  # up to and including /v1, e.g. http://127.0.0.1:8080/v1
    model: str = Field(min_length=1)
    provider: str = "openai-compatible"
    key_env: str | None = None  # None: the upstream needs no key (a local server)
    timeout_s: float = Field(default=60.0, gt=0, le=600)
    # Models a signed manifest may ask for; the round's `model` is always allowed.
    models: tuple[str, ...] = ()
    # The most tokens the whole round may spend. Shared evenly by the round's reps, since a
    # pool they drew on in turn would make one rep's answers depend on another's timing.
    round_tokens: int | None = Field(default=None, gt=0)
    rep_tokens: int | None = None  # each rep's share: set when the round is planned
    price: Price | None = None

    def planned(self, reps: int) -> InferenceConfig:
        """The table as a round of `reps` reps records it: with each rep's token share."""
        if self.round_tokens is None:
            return self
        return self.model_copy(update={"rep_tokens": self.round_tokens // max(reps, 1)})

    def rep_budget(self, budget: InferenceBudget) -> InferenceBudget:
        """The mechanism's per-rep budget, narrowed to the rep's share of the round's."""
        if self.rep_tokens is None or self.rep_tokens >= budget.tokens:
            return budget
        return dataclasses.replace(budget, tokens=self.rep_tokens)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL")
        # The URL is recorded with the round and shown in reports: no secret may ride in it.
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError("may hold no user, password or query; name the key in key_env")
        return value.rstrip("/")

    def model_for(self, requested: str | None) -> str:
        """The model an agent gets: the one its manifest names when allowed, else the round's."""
        return requested if requested in self.models else self.model

    @classmethod
    def from_table(cls, table: Any) -> InferenceConfig:
        if isinstance(table, dict) and "rep_tokens" in table:
            raise InferenceConfigError(
                "[inference] rep_tokens: set round_tokens; each rep's share is derived from it"
            )
        try:
            return cls.model_validate(table)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'inference'}: {e['msg']}" for e in exc.errors()
            )
            raise InferenceConfigError(f"[inference] {problems}") from None
