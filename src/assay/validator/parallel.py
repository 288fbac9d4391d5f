"""Scoring a large records file on every core.

Agents are scored independently until ranking, so each worker process reads
the file, fully decodes only the lines of its share of the agents (a cheap
agent-only decode sorts the rest out), and scores them. The parent merges the
workers' views, checks that the ground truth agrees across them, and ranks
and weighs exactly as `scorecard` does: the result is the same object.
"""

from __future__ import annotations

import multiprocessing
import os
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgspec

from assay.mechanism.scoring import TaskTruth
from assay.mechanism.spec import MechanismSpec, Track
from assay.records.rep import RecordError, bulk, parse_line, read_records
from assay.records.scorecard import AgentTrackScore, Scorecard
from assay.validator.scoring import Grouping, check_complete, finish, scorecard, unranked_views

# Below this size a single process wins: forking and merging cost more than they save.
PARALLEL_MIN_BYTES = 32 << 20


class _AgentOnly(msgspec.Struct):
    agent: str = ""


_AGENT = msgspec.json.Decoder(_AgentOnly)
_VIEWS = msgspec.msgpack.Decoder(dict[Track, dict[str, AgentTrackScore]])


@dataclass(frozen=True)
class _Part:
    views: bytes  # msgpack of Views: cheap to ship back to the parent
    truth: dict[tuple[Track, str], TaskTruth]
    error: tuple[int, str] | None  # (line or a large number, message)


def _owner(agent: str, workers: int) -> int:
    return zlib.crc32(agent.encode()) % workers


_AGENT_PREFIX = b'{"agent":"'


def _agent_of(line: bytes) -> str:
    """The line's agent id, cheaply: records written by assay start with it."""
    if line.startswith(_AGENT_PREFIX):
        end = line.find(b'"', len(_AGENT_PREFIX))
        agent = line[len(_AGENT_PREFIX) : end]
        if end > 0 and b"\\" not in agent:
            return agent.decode("utf-8", "replace")
    try:
        return _AGENT.decode(line).agent
    except (msgspec.DecodeError, ValueError):
        return ""  # the full decode names the problem; the worker owning "" reads it


def _read_share(path: Path, worker: int, workers: int) -> Grouping:
    grouping = Grouping()
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            agent = _agent_of(line)
            if _owner(agent, workers) == worker:
                grouping.add(parse_line(line, number))
    return grouping


def _score_share(path: Path, worker: int, workers: int, spec: MechanismSpec) -> _Part:
    with bulk():
        try:
            grouping = _read_share(path, worker, workers)
        except RecordError as exc:
            return _Part(b"", {}, (exc.line or 1 << 62, str(exc)))
        except OSError as exc:
            return _Part(b"", {}, (0, f"cannot read: {exc.strerror}"))
        views = msgspec.msgpack.encode(unranked_views(grouping, spec))
        return _Part(views, grouping.truth, None)


def _merge_truth(parts: list[_Part]) -> dict[tuple[Track, str], TaskTruth]:
    truth: dict[tuple[Track, str], TaskTruth] = {}
    for part in parts:
        for key, value in part.truth.items():
            if truth.setdefault(key, value) != value:
                raise RecordError(
                    f"{key[0]}/{key[1]}: label or ground truth differs between records"
                )
    return truth


def score_file(
    path: Path,
    *,
    salt: str,
    spec: MechanismSpec,
    jobs: int | None = None,
    min_bytes: int = PARALLEL_MIN_BYTES,
) -> Scorecard:
    """The scorecard of a records file, computed on `jobs` processes (default: every core)."""
    workers = jobs or os.cpu_count() or 1
    if workers == 1 or not path.is_file() or path.stat().st_size < min_bytes:
        return scorecard(read_records(path), salt=salt, spec=spec)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(_score_share, path, i, workers, spec) for i in range(workers)]
        parts = [f.result() for f in futures]
    errors = sorted(p.error for p in parts if p.error)
    if errors:
        raise RecordError(errors[0][1], errors[0][0])
    truth = _merge_truth(parts)
    views: dict[Track, dict[str, AgentTrackScore]] = {}
    with bulk():
        for part in parts:
            for track, agents in _VIEWS.decode(part.views).items():
                views.setdefault(track, {}).update(agents)
    check_complete(
        truth,
        {
            t: {a: [r.task for r in v.task_results] for a, v in agents.items()}
            for t, agents in views.items()
        },
    )
    return finish(views, salt=salt, spec=spec)
