"""Behavioural screening: agents whose reports are the same on every task of a track.

Copy screening at intake reads the code; an agent rewritten to read differently but
answer identically gets past it. After the round, each agent's report on each task of
a track (the rep that speaks for it: verdict, findings and vulnerabilities, in a fixed
order) is compared: two agents of different owners whose reports are identical on
every task are copies, and only the earlier arrival (`RoundPlan.arrival_order`) keeps
its score; the later ones score 0 on that track. Only reports that name something (a
finding or a vulnerability on some task) are compared: honest agents that differ often
give the same bare verdicts on a small draw (a constant agent and a coin that came up
the same way), and such reports prove no copy. A plan without an arrival order (rounds
planned before it was kept) screens nothing, so such rounds score as they always did.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from assay.records.plan import RoundPlan
from assay.records.rep import RepRecord
from assay.validator.scoring import speaking_reps

# (verdict, findings, vulnerabilities), each item list in its canonical JSON order
_Report = tuple[str | None, tuple[bytes, ...], tuple[bytes, ...]]


def _normalised(record: RepRecord) -> _Report:
    def items(values: Iterable[object]) -> tuple[bytes, ...]:
        return tuple(sorted(msgspec.json.encode(v, order="sorted") for v in values))

    return record.verdict, items(record.findings), items(record.vulnerabilities)


def behavioural_copies(records: Iterable[RepRecord], plan: RoundPlan) -> dict[str, dict[str, str]]:
    """Track -> agent -> why, for every later arrival whose reports equal an earlier's."""
    if not plan.arrival_order:
        return {}
    speaking = speaking_reps(records)
    tasks: dict[str, list[str]] = {}
    for task in plan.tasks:
        tasks.setdefault(task.track.value, []).append(task.task_id)
    out: dict[str, dict[str, str]] = {}
    for track, names in sorted(tasks.items()):
        first: dict[tuple[_Report | None, ...], str] = {}
        for agent in plan.arrival_order:
            reports = tuple(
                _normalised(r) if (r := speaking.get((agent, track, t))) else None
                for t in sorted(names)
            )
            if not any(r and (r[1] or r[2]) for r in reports):
                continue  # verdicts alone coincide too often on a small draw to prove a copy
            original = first.setdefault(reports, agent)
            if original != agent and plan.owner(original) != plan.owner(agent):
                out.setdefault(track, {})[agent] = (
                    f"behavioural screening: its reports on every {track} task are those of "
                    f"{original[:12]}, which arrived first"
                )
    return out
