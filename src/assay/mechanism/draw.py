"""The task draw (DESIGN §9), recomputable by anyone.

The round seed of a chain-mode round is the chain's (`chain_round_seed`): the hash of
the anchor block (the block of the subnet's last epoch, where its current tempo begins)
with the digest of the corpus, so every honest validator with the same corpus draws the
same tasks this tempo, and no one knew them before the anchor block was made. A shared
draw uses no validator id. A local round's seed is the operator's (`--seed`, else
random) and its draw is the validator's own.

Algorithm (exact; hex digests are lowercase, strings are UTF-8):

0. In chain mode, ``round_seed = sha256(f"assay/round-seed/v1:{block_hash}:{corpus_digest}")``
   with ``block_hash`` the anchor block's hash as the chain spells it, lowercased
   (``0x`` and 64 hex digits), and ``corpus_digest`` as `corpus.interface.corpus_digest`.
1. ``draw_seed = round_seed`` for a shared (chain-mode) draw; for a validator's own
   draw, ``draw_seed = sha256(f"{round_seed}:{validator_id}").hexdigest()``.
2. For every task of the track, ``key = sha256(f"{draw_seed}:{track}:{task_id}").hexdigest()``.
3. Sort the tasks by ``(key, task_id)``; the task id only breaks a (practically
   impossible) key tie, so the order never depends on input order.
4. Take the first ``count`` tasks, where ``count`` is the track's task count of the
   mechanism spec; every task when the track has fewer. The result keeps the
   sorted order of step 3.

Python's `random` is deliberately not used: its algorithms may change between
versions, and a draw must come out the same in any language.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, TypeVar

from assay.mechanism.spec import Track


class Drawable(Protocol):
    """What the draw reads of a task (a corpus task satisfies it)."""

    @property
    def track(self) -> Track: ...

    @property
    def task_id(self) -> str: ...


T = TypeVar("T", bound=Drawable)


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chain_round_seed(block_hash: str, corpus_digest: str) -> str:
    """A chain-mode round's seed: the same for every validator with this corpus whose
    subnet's last epoch ran at the block of `block_hash`."""
    return _sha256_hex(f"assay/round-seed/v1:{block_hash.lower()}:{corpus_digest}")


def draw_seed(round_seed: str, validator_id: str | None) -> str:
    """The seed the draw keys hang from: the round seed itself for a shared draw
    (`validator_id` None), else one of this validator's own."""
    if validator_id is None:
        return round_seed
    return _sha256_hex(f"{round_seed}:{validator_id}")


def draw_key(seed: str, track: Track, task_id: str) -> str:
    return _sha256_hex(f"{seed}:{track.value}:{task_id}")


def draw_tasks(
    tasks: Sequence[T],
    *,
    track: Track,
    round_seed: str,
    validator_id: str | None,
    count: int,
) -> tuple[T, ...]:
    """The `count` tasks of `track` scored this round, in draw order: every validator's
    alike when `validator_id` is None (a shared draw), else this validator's own."""
    if count < 0:
        raise ValueError(f"task count must be >= 0, got {count}")
    seed = draw_seed(round_seed, validator_id)
    candidates = [t for t in tasks if t.track is track]
    ids = [t.task_id for t in candidates]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate task ids in track {track.value}")
    ordered = sorted(candidates, key=lambda t: (draw_key(seed, track, t.task_id), t.task_id))
    return tuple(ordered[:count])
