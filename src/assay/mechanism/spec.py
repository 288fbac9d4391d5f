"""The mechanism spec: the bytes of a `mechanism.toml` parsed into a frozen dataclass.

Reading the file is the edge's job (`assay.schema.mechanism_file`): the pinned spec
is loaded once there and passed in to everything that scores, so no function
here falls back on a default of its own.

A missing or invalid value is a `SpecError` naming the dotted key, never a
default silently filled in: every number here moves scores or weights.
"""

from __future__ import annotations

import hashlib
import math
import tomllib  # parsing bytes handed in: no file is read here
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Track(StrEnum):
    SKILLS = "skills"
    MCP_SERVERS = "mcp_servers"
    PACKAGES = "packages"
    REPOSITORIES = "repositories"

    @property
    def behavioural(self) -> bool:
        return self is not Track.REPOSITORIES


TRACKS: tuple[Track, ...] = tuple(Track)
BEHAVIOURAL_TRACKS: tuple[Track, ...] = tuple(t for t in Track if t.behavioural)


class SpecError(ValueError):
    """The mechanism file is missing a value or holds an invalid one."""


@dataclass(frozen=True)
class InferenceBudget:
    """What one rep may spend through the metered inference proxy."""

    requests: int
    tokens: int  # prompt + completion
    wall_extension_s: float  # most the wall backstop grows by for time spent upstream


@dataclass(frozen=True)
class TrackSpec:
    track: Track
    tasks: int
    reps: int
    cpu_budget_s: float
    metric: str
    threshold: float
    emission_share: float
    inference: InferenceBudget


@dataclass(frozen=True)
class SandboxLimits:
    memory_bytes: int
    cpus: int
    pids: int
    workspace_bytes: int
    report_bytes: int
    agent_code_bytes: int


@dataclass(frozen=True)
class MechanismSpec:
    version: str
    digest: str
    tracks: Mapping[Track, TrackSpec]
    wall_backstop_factor: float
    round_cap_factor: float
    sandbox: SandboxLimits
    top_split: tuple[float, ...]
    ema_new: float
    findings_weight: float
    title_overlap: float
    line_window: int
    clean_repository_divisor: int
    max_items_per_report: int
    copy_similarity: float  # agents at least this similar to an earlier one are copies

    def track(self, track: Track | str) -> TrackSpec:
        return self.tracks[Track(track)]

    def wall_backstop_s(self, track: Track | str) -> float:
        return self.wall_backstop_factor * self.track(track).cpu_budget_s

    def round_wall_cap_s(self, track: Track | str) -> float:
        t = self.track(track)
        return self.round_cap_factor * t.tasks * t.reps * t.cpu_budget_s


_METRICS = {"clamped_mcc", "f2"}


class _Reader:
    """Typed access into the parsed TOML that names the dotted key on failure."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def _get(self, key: str) -> Any:
        node: Any = self._data
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise SpecError(f"mechanism spec: missing value {key!r}")
            node = node[part]
        return node

    def number(self, key: str, *, low: float, high: float = math.inf) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SpecError(f"mechanism spec: {key!r} must be a number, got {value!r}")
        if not (low <= value <= high) or math.isnan(value):
            raise SpecError(f"mechanism spec: {key!r} = {value!r} is outside [{low}, {high}]")
        return float(value)

    def integer(self, key: str, *, low: int) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise SpecError(f"mechanism spec: {key!r} must be an integer >= {low}, got {value!r}")
        return value

    def text(self, key: str, choices: set[str] | None = None) -> str:
        value = self._get(key)
        if not isinstance(value, str) or not value or (choices and value not in choices):
            allowed = f" (one of {sorted(choices)})" if choices else ""
            raise SpecError(f"mechanism spec: {key!r} must be a string{allowed}, got {value!r}")
        return value

    def fractions(self, key: str) -> tuple[float, ...]:
        value = self._get(key)
        if not isinstance(value, list) or not value:
            raise SpecError(f"mechanism spec: {key!r} must be a non-empty list of numbers")
        out = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int | float) or not 0 <= item <= 1:
                raise SpecError(f"mechanism spec: {key}[{i}] must be in [0, 1], got {item!r}")
            out.append(float(item))
        if not math.isclose(sum(out), 1.0, abs_tol=1e-9):
            raise SpecError(f"mechanism spec: {key!r} must sum to 1, got {sum(out)}")
        return tuple(out)


def _track_spec(r: _Reader, track: Track) -> TrackSpec:
    p = f"tracks.{track.value}"
    return TrackSpec(
        track=track,
        tasks=r.integer(f"{p}.tasks", low=1),
        reps=r.integer(f"{p}.reps", low=1),
        cpu_budget_s=r.number(f"{p}.cpu_budget_s", low=0.001),
        metric=r.text(f"{p}.metric", _METRICS),
        threshold=r.number(f"{p}.threshold", low=0.0, high=1.0),
        emission_share=r.number(f"{p}.emission_share", low=0.0, high=1.0),
        inference=InferenceBudget(
            requests=r.integer(f"{p}.inference_requests", low=0),
            tokens=r.integer(f"{p}.inference_tokens", low=0),
            wall_extension_s=r.number(f"{p}.inference_wall_extension_s", low=0.0),
        ),
    )


def parse_spec(raw: bytes) -> MechanismSpec:
    """Parse and validate a mechanism file's bytes."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"mechanism spec: not valid TOML: {exc}") from exc
    r = _Reader(data)
    tracks = {t: _track_spec(r, t) for t in TRACKS}
    shares = sum(t.emission_share for t in tracks.values())
    if not math.isclose(shares, 1.0, abs_tol=1e-9):
        raise SpecError(f"mechanism spec: 'tracks.*.emission_share' must sum to 1, got {shares}")
    return MechanismSpec(
        version=r.text("mechanism_version"),
        digest=hashlib.sha256(raw).hexdigest(),
        tracks=tracks,
        wall_backstop_factor=r.number("budget.wall_backstop_factor", low=1.0),
        round_cap_factor=r.number("budget.round_cap_factor", low=1.0),
        sandbox=SandboxLimits(
            memory_bytes=r.integer("sandbox.memory_bytes", low=1 << 20),
            cpus=r.integer("sandbox.cpus", low=1),
            pids=r.integer("sandbox.pids", low=8),
            workspace_bytes=r.integer("sandbox.workspace_bytes", low=1 << 16),
            report_bytes=r.integer("sandbox.report_bytes", low=1024),
            agent_code_bytes=r.integer("sandbox.agent_code_bytes", low=1024),
        ),
        top_split=r.fractions("weights.top_split"),
        ema_new=r.number("weights.ema_new", low=0.0, high=1.0),
        findings_weight=r.number("matching.findings_weight", low=0.0, high=1.0),
        title_overlap=r.number("matching.title_overlap", low=0.0, high=1.0),
        line_window=r.integer("matching.line_window", low=0),
        clean_repository_divisor=r.integer("matching.clean_repository_divisor", low=1),
        max_items_per_report=r.integer("matching.max_items_per_report", low=1),
        copy_similarity=r.number("screening.copy_similarity", low=0.01, high=1.0),
    )
