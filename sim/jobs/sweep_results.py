"""A sweep's tables from its runs' summaries: ``points.parquet`` and ``sweep.json``.

``points``: one row per point × variant × tier × replication with the varied values and
every headline metric of the typed summary. ``sweep.json``: per point, variant and tier
the mean and 95 % Student-t interval over replications (:func:`sim.stats.mean_interval`)
of the SLO metrics, the fraction of replications meeting the SLO, the cheapest tier
meeting it in every replication; and each variant against the base as paired
differences (same replication seeds, so common random numbers cancel most noise).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..stats import mean_interval
from ..summary import RunSummary
from .sweep_plan import BASE, SweepPlan

HEADLINE = {
    "requests": lambda t: t.requests,
    "attempts": lambda t: t.attempts,
    "retries": lambda t: t.retries,
    "throttled": lambda t: t.throttled,
    "throttle_rate": lambda t: t.throttle_rate,
    "phantom_throttles": lambda t: t.phantom_throttles,
    "failure_rate": lambda t: t.failure_rate,
    "latency_p50_ms": lambda t: t.latency_ms.p50,
    "latency_p95_ms": lambda t: t.latency_ms.p95,
    "latency_p99_ms": lambda t: t.latency_ms.p99,
    "latency_mean_ms": lambda t: t.latency_ms.mean,
    "cu_reserved": lambda t: t.cu.reserved,
    "cu_settled": lambda t: t.cu.settled,
    "cu_peak_window_reserved": lambda t: t.cu.peak_window_reserved,
    "cu_peak_window_settled": lambda t: t.cu.peak_window_settled,
    "cu_limit": lambda t: t.cu.limit,
    "windows_with_throttles": lambda t: t.cu.windows_with_throttles,
    "daily_used_cu": lambda t: t.daily_allowance.used_cu,
    "daily_ran_out_at": lambda t: t.daily_allowance.ran_out_at,
    "retry_budget_refusals": lambda t: t.retry_budget_refusals,
    "refused_430": lambda t: t.connections.refused_430,
    "ws_events_lost": lambda t: t.websockets.events_lost if t.websockets else 0,
    "monthly_usd": lambda t: t.monthly_usd,
    "meets_slo": lambda t: t.meets_slo,
}
"""Columns of ``points.parquet`` taken from each tier's summary."""

_COUNTS = {"requests", "attempts", "retries", "throttled", "phantom_throttles",
           "windows_with_throttles", "retry_budget_refusals", "refused_430", "ws_events_lost"}

INTERVAL_METRICS = {
    "throttle_rate": "throttle_rate",
    "failure_rate": "failure_rate",
    "p99_latency_ms": "latency_p99_ms",
    "cu_settled": "cu_settled",
    "cost_usd": "monthly_usd",
}
"""``sweep.json`` metric -> ``points`` column; each gets a mean and a 95 % interval."""


def points_frame(plan: SweepPlan, summaries: dict[str, RunSummary]) -> pd.DataFrame:
    """One row per point × variant × tier × replication, in plan order."""
    rows: list[dict[str, Any]] = []
    for spec in plan.runs:
        summary = summaries[spec.run_id]
        values = plan.points[spec.point]
        for t in summary.tiers:
            row = {"point": spec.point, "variant": spec.variant,
                   "replication": spec.replication, "seed": str(spec.seed)}
            row.update({f.path: values[f.path] for f in plan.factors})
            row["tier"] = t.tier
            row.update({name: get(t) for name, get in HEADLINE.items()})
            rows.append(row)
    frame = pd.DataFrame(rows)
    for f in plan.factors:
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in f.values)
        frame[f.path] = frame[f.path].astype(float) if numeric else \
            frame[f.path].map(lambda v: v if isinstance(v, str) else repr(v)).astype(str)
    for col in ("point", "replication"):
        frame[col] = frame[col].astype(np.int64)
    for col in HEADLINE:
        if col in ("daily_ran_out_at",):
            frame[col] = frame[col].astype(object)
        elif col in _COUNTS:
            frame[col] = frame[col].astype(np.int64)
        elif col == "meets_slo":
            frame[col] = frame[col].astype(bool)
        else:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    frame["variant"] = pd.Categorical(frame["variant"], categories=list(plan.variants))
    frame["tier"] = pd.Categorical(frame["tier"], categories=list(plan.tiers))
    return frame


def _interval(values) -> dict[str, Any]:
    iv = mean_interval(list(values))
    mean = None if math.isnan(iv.mean) else iv.mean
    return {"mean": mean, "half_width": iv.half_width, "low": iv.low, "high": iv.high,
            "n": iv.n}


def _cheapest(rows: list[dict[str, Any]], limits: dict[str, float]) -> str | None:
    meeting = [r for r in rows if r["slo_met_fraction"] == 1.0]
    if not meeting:
        return None
    priced = [r for r in meeting if r["cost_usd"]["mean"] is not None]
    pool = priced or meeting
    best = min(pool, key=lambda r: (r["cost_usd"]["mean"] if priced else 0, limits[r["tier"]]))
    return best["tier"]


def sweep_document(plan: SweepPlan, points: pd.DataFrame,
                   base_summary: RunSummary) -> dict[str, Any]:
    """The content of ``sweep.json``."""
    limits = {t.tier: t.cu_per_window for t in base_summary.tiers}
    groups = {key: g for key, g in points.groupby(["point", "variant", "tier"], observed=True,
                                                  sort=False)}
    out_points = []
    for p, values in enumerate(plan.points):
        for variant in plan.variants:
            tiers = []
            for tier in plan.tiers:
                g = groups[(p, variant, tier)].sort_values("replication")
                entry = {"tier": tier, "n": len(g)}
                entry.update({name: _interval(g[col]) for name, col in INTERVAL_METRICS.items()})
                entry["slo_met_fraction"] = float(g["meets_slo"].mean())
                tiers.append(entry)
            out_points.append({"point": p, "values": values, "variant": variant, "tiers": tiers,
                               "cheapest_meeting_slo": _cheapest(tiers, limits)})
    diffs = []
    for p, values in enumerate(plan.points):
        for variant in plan.variants:
            if variant == BASE:
                continue
            for tier in plan.tiers:
                base = groups[(p, BASE, tier)].sort_values("replication")
                var = groups[(p, variant, tier)].sort_values("replication")
                entry = {"point": p, "values": values, "variant": variant, "tier": tier}
                for name, col in INTERVAL_METRICS.items():
                    d = var[col].to_numpy(float) - base[col].to_numpy(float)
                    entry[name] = _interval(d)
                entry["slo_met_fraction"] = {"base": float(base["meets_slo"].mean()),
                                             "variant": float(var["meets_slo"].mean())}
                diffs.append(entry)
    return {
        "capsim_version": __version__,
        "scenario": plan.scenario_name,
        "scenario_file": plan.scenario_label,
        "fingerprint": plan.fingerprint,
        "replications": plan.replications,
        "confidence_level": 0.95,
        "tiers": list(plan.tiers),
        "vary": [{"path": f.path, "values": list(f.values)} for f in plan.factors],
        "variants": [v for v in plan.variants if v != BASE],
        "slo": base_summary.slo.model_dump(),
        "points": out_points,
        "variant_differences": diffs,
    }

