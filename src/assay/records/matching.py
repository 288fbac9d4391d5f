"""Why a task's findings scored as they did: the report standing for the task matched
against the label, pair by pair, as `assay.mechanism.explain` weighs it.

Every view (HTML, terminal, JSON, Markdown) prints these records as they are,
so the reasons are computed once, by the validator, and worded once.
"""

from __future__ import annotations

from typing import Any

import msgspec

from assay.mechanism.explain import Explanation


class TaskMatching(msgspec.Struct, frozen=True, kw_only=True):
    """One agent's task: which rep's report was matched, and how.

    JSON (`to_json`, stable keys, documented in docs/agents.md):
    `rep` (int or null when no rep completed), `kind` (findings or
    vulnerabilities), `line_window`, `title_overlap`, `expected` and `reported`
    (the items as matching reads them), `note`, and `pairs`: per expected item,
    then per reported item that matched nothing, `{subject, expected, reported,
    matched, agrees, checks}` where `expected`/`reported` index the lists and
    each check is `{criterion, passed, reported, expected, why}`.
    """

    rep: int | None
    explanation: Explanation

    @property
    def matched(self) -> tuple[bool, ...]:
        return self.explanation.matched

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self.explanation)
        return {"rep": self.rep, **out}


MatchingKey = tuple[str, str, str]  # agent, track, task
