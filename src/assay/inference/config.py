"""Where the model lives: the `[inference]` table of round.toml, and the key from the environment.

The key is read from the environment variable the table names, at the moment a
round (or a resumed one) starts, and only ever travels inside an `Upstream`,
whose repr hides it. The configuration itself (no key) is recorded with the
round's plan, so a resumed round talks to the same upstream and model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from assay.schema.inference import InferenceConfig, InferenceConfigError


def resolve_upstream(config: InferenceConfig) -> Upstream:
    """The configuration with its key, read now from the environment."""
    if config.key_env is None:
        return Upstream(config, "")
    key = os.environ.get(config.key_env, "")
    if not key:
        raise InferenceConfigError(
            f"[inference] key_env names {config.key_env!r}, which is not set in the environment"
        )
    return Upstream(config, key)


@dataclass(frozen=True)
class Upstream:
    """A configuration and its key. Picklable (remote executors), never printed with the key."""

    config: InferenceConfig
    key: str = field(repr=False)
