"""``sweep.json`` as a typed document: the file's keys in their order, read back whole.

The report, the CLI and the plots read the document's attributes; the file keeps the
layout it had as a dict (the keys below are those of files written before it was typed).
"""

from __future__ import annotations

import json

from sim.jobs.sweep_results import (
    INTERVAL_METRICS,
    IntervalFigure,
    IntervalMetrics,
    PointTier,
    SloMet,
    SweepDocument,
    SweepPoint,
    VariantDifference,
    VaryFactor,
)
from sim.results.summary import SloSummary

METRICS = ["throttle_rate", "failure_rate", "p99_latency_ms", "cu_settled", "cost_usd",
           "cu_per_day", "allowance_days"]


def _iv(mean):
    return IntervalFigure.of([mean, mean + 2.0])


def _doc() -> SweepDocument:
    metrics = {m: _iv(float(i)) for i, m in enumerate(METRICS)}
    tier = PointTier(tier="RPC", n=2, slo_met_fraction=0.5, **metrics)
    diff = VariantDifference(point=0, values={"load": 2}, variant="v", tier="RPC",
                             slo_met_fraction=SloMet(base=1.0, variant=0.5), **metrics)
    return SweepDocument(
        capsim_version="0", scenario="s", scenario_file="s.toml", fingerprint="f",
        replications=2, confidence_level=0.95, tiers=("RPC",),
        vary=(VaryFactor(path="load", values=(1, 2)),), variants=("v",),
        slo=SloSummary(max_throttle_rate=0.01, max_failure_rate=0.001, p99_latency_ms=2000),
        points=(SweepPoint(point=0, values={"load": 2}, variant="base", tiers=(tier,),
                           cheapest_meeting_slo=None),),
        variant_differences=(diff,))


def test_the_metrics_are_the_points_columns_named_once():
    assert list(INTERVAL_METRICS) == list(IntervalMetrics.model_fields) == METRICS


def test_keys_keep_the_files_order():
    data = json.loads(_doc().to_json())
    assert list(data) == ["capsim_version", "scenario", "scenario_file", "fingerprint",
                          "replications", "confidence_level", "tiers", "vary", "variants",
                          "slo", "points", "variant_differences", "cheapest_differences",
                          "identical_by_construction"]
    assert list(data["points"][0]["tiers"][0]) == ["tier", "n", *METRICS, "slo_met_fraction"]
    assert list(data["variant_differences"][0]) == ["point", "values", "variant", "tier",
                                                    *METRICS, "slo_met_fraction"]
    assert list(data["points"][0]["tiers"][0]["cost_usd"]) == ["mean", "half_width", "low",
                                                              "high", "n"]


def test_an_interval_of_two_values():
    # mean 1, sample sd sqrt(2), t(0.975, 1) = 12.706: half-width 12.706 * sqrt(2) / sqrt(2).
    iv = IntervalFigure.of([0.0, 2.0])
    assert iv.mean == 1.0 and iv.n == 2
    assert abs(iv.half_width - 12.7062) < 1e-3 and iv.low == 1.0 - iv.half_width
    assert IntervalFigure.of([]).mean is None and IntervalFigure.of([3.0]).half_width is None


def test_the_file_reads_back_as_the_same_document():
    doc = _doc()
    assert SweepDocument.model_validate(json.loads(doc.to_json())) == doc
