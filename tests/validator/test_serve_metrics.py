"""`/metrics` as Prometheus reads it: totals are counters named `_total`, a block never
set is absent (not 0), and `assay_up` / `assay_info` say the validator is there."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from assay import __version__
from assay.validator.serve import Metrics, ServeStatus


def _scrape(metrics: Metrics) -> dict[str, tuple[str, dict[str, float]]]:
    text = generate_latest(metrics.registry).decode()
    return {
        family.name: (family.type, {s.name: s.value for s in family.samples})
        for family in text_string_to_metric_families(text)
    }


def test_counters_gauges_and_a_block_only_once_set() -> None:
    metrics = Metrics()
    fresh = _scrape(metrics)
    assert "assay_last_weights_block" not in fresh, "never set: absent, not 0"
    assert fresh["assay_up"] == ("gauge", {"assay_up": 1.0})
    text = generate_latest(metrics.registry).decode()
    assert f'assay_info{{version="{__version__}"}} 1.0' in text
    for name in ("assay_rounds_completed", "assay_chain_retries", "assay_errors"):
        assert fresh[name] == ("counter", {f"{name}_total": 0.0}), name
    assert fresh["assay_round_reps_done"][0] == "gauge"

    metrics.show(ServeStatus(rounds_completed=2, chain_retries=3, last_weights_block=200), 1)
    seen = _scrape(metrics)
    assert seen["assay_rounds_completed"][1] == {"assay_rounds_completed_total": 2.0}
    assert seen["assay_errors"][1] == {"assay_errors_total": 1.0}
    assert seen["assay_last_weights_block"] == ("gauge", {"assay_last_weights_block": 200.0})
