"""Split a native corpus into a tuning part and a set-aside part, once, before any tuning.

The split is stratified (per track, label and ecosystem, so both parts keep the
corpus's mix) and seeded: a task's rank is sha256(seed, track, task id), so the same
corpus and seed always give the same split. A stratum's cut is a share of its size, so
a grown corpus is extended by splitting its additions on their own, not by splitting
the whole again. `split.json` beside the two parts records the seed and every task's
part, so the split travels with the corpus.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from assay.corpus.interface import CorpusError, Task
from assay.corpus.native import NativeCorpus
from assay.mechanism.spec import TRACKS

TUNING = "tuning"
SET_ASIDE = "set-aside"
SPLIT_FILE = "split.json"


@dataclass(frozen=True)
class Split:
    seed: str
    parts: dict[str, list[str]]  # part -> "<track>/<task id>", sorted


def _stratum(task: Task) -> tuple[str, str, str]:
    ecosystem = task.source.get("ecosystem") or task.source.get("registry") or ""
    return task.track.value, task.label.value, str(ecosystem)


def _rank(seed: str, task: Task) -> str:
    return hashlib.sha256(f"{seed}\0{task.track.value}\0{task.task_id}".encode()).hexdigest()


def plan_split(corpus: NativeCorpus, seed: str, set_aside_share: float = 0.5) -> Split:
    """Each stratum's tasks ordered by their seeded rank; the first share set aside."""
    strata: dict[tuple[str, str, str], list[Task]] = defaultdict(list)
    for track in TRACKS:
        for task in corpus.tasks(track):
            strata[_stratum(task)].append(task)
    parts: dict[str, list[str]] = {TUNING: [], SET_ASIDE: []}
    for _, tasks in sorted(strata.items()):
        ranked = sorted(tasks, key=lambda t: _rank(seed, t))
        cut = round(len(ranked) * set_aside_share)
        for n, task in enumerate(ranked):
            parts[SET_ASIDE if n < cut else TUNING].append(f"{task.track.value}/{task.task_id}")
    return Split(seed, {part: sorted(names) for part, names in parts.items()})


def write_split(src: Path, dest: Path, seed: str, set_aside_share: float = 0.5) -> Split:
    """Copy the corpus at `src` into `dest/tuning` and `dest/set-aside`, with split.json."""
    if dest.exists():
        raise CorpusError(f"{dest}: the destination of a split must not exist yet")
    split = plan_split(NativeCorpus(src), seed, set_aside_share)
    for part, names in split.parts.items():
        for name in names:
            shutil.copytree(src / name, dest / part / name, symlinks=True)
    record = {
        "seed": seed,
        "set_aside_share": set_aside_share,
        "method": "per (track, label, ecosystem): sorted by sha256(seed, track, task id); "
        "the first share set aside",
        "parts": split.parts,
    }
    (dest / SPLIT_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return split
