"""The terminal's ranking tables fit an 80-column terminal without cutting an agent's hash."""

from __future__ import annotations

import io

from report_fixtures import build_result
from rich.console import Console

from assay.cli.output import _track_table
from assay.records.agent import short_hash


def test_ranking_tables_keep_every_hash_and_column_at_80_columns() -> None:
    result = build_result(agents=5, scale=0.1)
    assert result.card is not None
    for track, scores in result.card.scores.items():
        out = io.StringIO()
        Console(file=out, width=80, color_system=None).print(
            _track_table(track, scores, result.agents)
        )
        text = out.getvalue()
        assert max(len(line) for line in text.splitlines()) <= 80
        for header in ("rank", "agent", "score", "interval", "failed", "eligible"):
            assert header in text, (track, header)
        for agent in scores:
            assert short_hash(agent) in text, (track, agent)
