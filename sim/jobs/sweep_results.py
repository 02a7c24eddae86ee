"""A sweep's tables from its runs' summaries: ``points.parquet`` and ``sweep.json``.

``points``: one row per point × variant × tier × replication with the varied values and
every headline metric of the typed summary. ``sweep.json``: per point, variant and tier
the mean and 95 % Student-t interval over replications (:func:`sim.core.intervals.mean_interval`)
of the SLO metrics, the fraction of replications meeting the SLO, the cheapest tier
meeting it in every replication; and each variant against the base as paired
differences (same replication seeds, so common random numbers cancel most noise).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, model_serializer

from ..core.version import __version__
from ..results.decided import union_labels
from ..results.replications import IntervalFigure
from ..results.summary import RunSummary, SloSummary
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
    "decided_by": lambda t: union_labels([t]),
}
"""Columns of ``points.parquet`` taken from each tier's summary (``decided_by``: what
made the tier fail, as the stdout table's labels, e.g. ``"window, allowance*"``; empty
when it meets the SLO)."""

def cu_per_day(tier, duration_s: float) -> float | None:
    """CU charged a day at the run's rate: the CI gate's ``cu_per_day`` (settled by
    requests and handshakes, spent by billed publishes; one home, its catalogue)."""
    from types import SimpleNamespace

    from ..results.catalogue import BY_NAME

    return BY_NAME["cu_per_day"].read(SimpleNamespace(duration_s=duration_s), tier)


def allowance_days(tier, duration_s: float) -> float | None:
    """Days the tier's daily allowance covers at the run's rate (None: no allowance, or
    nothing charged)."""
    per_day = cu_per_day(tier, duration_s)
    allowance = tier.daily_allowance.allowance_cu
    if allowance is None or not per_day:
        return None
    return allowance / per_day


_COUNTS = {"requests", "attempts", "retries", "throttled", "phantom_throttles",
           "windows_with_throttles", "retry_budget_refusals", "refused_430", "ws_events_lost"}

class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class IntervalMetrics(_Frozen):
    """The metrics ``sweep.json`` gives an interval for (field order: file order)."""

    throttle_rate: IntervalFigure
    failure_rate: IntervalFigure
    p99_latency_ms: IntervalFigure
    cu_settled: IntervalFigure
    cost_usd: IntervalFigure
    cu_per_day: IntervalFigure
    allowance_days: IntervalFigure


INTERVAL_METRICS = {
    "throttle_rate": "throttle_rate",
    "failure_rate": "failure_rate",
    "p99_latency_ms": "latency_p99_ms",
    "cu_settled": "cu_settled",
    "cost_usd": "monthly_usd",
    "cu_per_day": "cu_per_day",
    "allowance_days": "allowance_days",
}
"""``sweep.json`` metric (a field of every point's tier) -> ``points`` column."""


class PointTier(IntervalMetrics):
    """One tier at one point and variant: each metric over the replications."""

    tier: str
    n: int
    slo_met_fraction: float  # replications meeting the SLO
    decided_by: str | None = None
    """What made the failing replications fail, with how many when not all: "window
    (2/3), allowance*" (:func:`sim.results.decided.union_labels`); absent when every
    replication meets the SLO."""

    # ``tier`` and ``n`` come first in the file.
    @model_serializer(mode="wrap")
    def _tier_first(self, handler):
        data = handler(self)
        if self.decided_by is None:
            data.pop("decided_by", None)
        return {"tier": data.pop("tier"), "n": data.pop("n"), **data}


class SweepPoint(_Frozen):
    """A point of the grid under one variant: its tiers and the cheapest meeting the SLO."""

    point: int
    values: dict[str, Any]
    variant: str
    tiers: tuple[PointTier, ...]
    cheapest_meeting_slo: str | None
    cheapest_monthly_usd: float | None = None  # its price (mean over replications)


class SloMet(_Frozen):
    """Fractions of replications meeting the SLO, base and variant."""

    base: float
    variant: float


class VariantDifference(IntervalMetrics):
    """A variant minus the base at one point and tier, replication by replication."""

    point: int
    values: dict[str, Any]
    variant: str
    tier: str
    slo_met_fraction: SloMet

    @model_serializer(mode="wrap")
    def _where_first(self, handler):
        data = handler(self)
        head = {k: data.pop(k) for k in ("point", "values", "variant", "tier")}
        return {**head, **data}


class CheapestDifference(_Frozen):
    """At one point, the monthly price of the cheapest tier meeting the SLO under a
    variant minus under the base, replication by replication (a replication where no
    tier meets, in either, is left out: ``n`` counts the others)."""

    point: int
    values: dict[str, Any]
    variant: str
    base_tier: str | None
    tier: str | None
    difference_usd: IntervalFigure


class VaryFactor(_Frozen):
    """A varied key path and its values."""

    path: str
    values: tuple[Any, ...]


class SweepDocument(_Frozen):
    """The content of ``sweep.json``."""

    capsim_version: str
    scenario: str
    scenario_file: str
    fingerprint: str
    replications: int
    confidence_level: float
    tiers: tuple[str, ...]
    vary: tuple[VaryFactor, ...]
    variants: tuple[str, ...]
    slo: SloSummary
    points: tuple[SweepPoint, ...]
    variant_differences: tuple[VariantDifference, ...]
    cheapest_differences: tuple[CheapestDifference, ...] = ()
    identical_by_construction: dict[str, str] = {}
    """Variant -> why it simulates exactly as the base at every point
    (:mod:`sim.jobs.identical`)."""

    def to_json(self) -> str:
        """The text of ``sweep.json``."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False,
                          allow_nan=False) + "\n"


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
            row["cu_per_day"] = cu_per_day(t, summary.duration_s)
            row["allowance_days"] = allowance_days(t, summary.duration_s)
            rows.append(row)
    frame = pd.DataFrame(rows)
    for f in plan.factors:
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in f.values)
        frame[f.path] = frame[f.path].astype(float) if numeric else \
            frame[f.path].map(lambda v: v if isinstance(v, str) else repr(v)).astype(str)
    for col in ("point", "replication"):
        frame[col] = frame[col].astype(np.int64)
    for col in (*HEADLINE, "cu_per_day", "allowance_days"):
        if col in ("daily_ran_out_at",):
            frame[col] = frame[col].astype(object)
        elif col in _COUNTS:
            frame[col] = frame[col].astype(np.int64)
        elif col == "meets_slo":
            frame[col] = frame[col].astype(bool)
        elif col == "decided_by":
            frame[col] = frame[col].astype(str)
        else:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    frame["variant"] = pd.Categorical(frame["variant"], categories=list(plan.variants))
    frame["tier"] = pd.Categorical(frame["tier"], categories=list(plan.tiers))
    return frame


def _decided(labels: pd.Series) -> str | None:
    """The causes over a point's replications (each a ``decided_by`` cell), in the order
    they first appear, with how many replications each decided when not all."""
    counts: dict[str, int] = {}
    for cell in labels:
        for part in filter(None, str(cell).split(", ")):
            counts[part] = counts.get(part, 0) + 1
    if not counts:
        return None
    n = len(labels)
    return ", ".join(c if k == n else f"{c} ({k}/{n})" for c, k in counts.items())


def _cheapest(rows: list[PointTier], limits: dict[str, float]) -> str | None:
    meeting = [r for r in rows if r.slo_met_fraction == 1.0]
    if not meeting:
        return None
    priced = [r for r in meeting if r.cost_usd.mean is not None]
    pool = priced or meeting
    best = min(pool, key=lambda r: (r.cost_usd.mean if priced else 0, limits[r.tier]))
    return best.tier


def sweep_document(plan: SweepPlan, points: pd.DataFrame,
                   base_summary: RunSummary) -> SweepDocument:
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
                tiers.append(PointTier(
                    tier=tier, n=len(g), slo_met_fraction=float(g["meets_slo"].mean()),
                    decided_by=_decided(g["decided_by"]),
                    **{name: IntervalFigure.of(g[col]) for name, col in INTERVAL_METRICS.items()}))
            cheapest = _cheapest(tiers, limits)
            price = next((t.cost_usd.mean for t in tiers if t.tier == cheapest), None)
            out_points.append(SweepPoint(point=p, values=values, variant=variant,
                                         tiers=tuple(tiers), cheapest_meeting_slo=cheapest,
                                         cheapest_monthly_usd=price))
    diffs = []
    for p, values in enumerate(plan.points):
        for variant in plan.variants:
            if variant == BASE:
                continue
            for tier in plan.tiers:
                base = groups[(p, BASE, tier)].sort_values("replication")
                var = groups[(p, variant, tier)].sort_values("replication")
                diffs.append(VariantDifference(
                    point=p, values=values, variant=variant, tier=tier,
                    slo_met_fraction=SloMet(base=float(base["meets_slo"].mean()),
                                            variant=float(var["meets_slo"].mean())),
                    **{name: IntervalFigure.of(var[col].to_numpy(float)
                                               - base[col].to_numpy(float))
                       for name, col in INTERVAL_METRICS.items()}))
    cheapest_diffs = [_cheapest_difference(points, p, values, variant, limits)
                      for p, values in enumerate(plan.points)
                      for variant in plan.variants if variant != BASE]
    return SweepDocument(
        capsim_version=__version__,
        scenario=plan.scenario_name,
        scenario_file=plan.scenario_label,
        fingerprint=plan.fingerprint,
        replications=plan.replications,
        confidence_level=0.95,
        tiers=tuple(plan.tiers),
        vary=tuple(VaryFactor(path=f.path, values=tuple(f.values)) for f in plan.factors),
        variants=tuple(v for v in plan.variants if v != BASE),
        slo=base_summary.slo,
        points=tuple(out_points),
        variant_differences=tuple(diffs),
        cheapest_differences=tuple(cheapest_diffs),
        identical_by_construction=identical_variants(plan),
    )


def _cheapest_by_replication(g: pd.DataFrame, limits: dict[str, float]
                             ) -> dict[int, tuple[str, float]]:
    """Replication -> (the cheapest tier meeting the SLO in it, its monthly price)."""
    out = {}
    for r, rows in g.groupby("replication", sort=True):
        meeting = rows[rows["meets_slo"] & rows["monthly_usd"].notna()]
        if len(meeting):
            best = min(meeting.itertuples(), key=lambda t: (t.monthly_usd, limits[t.tier]))
            out[int(r)] = (str(best.tier), float(best.monthly_usd))
    return out


def _cheapest_difference(points: pd.DataFrame, p: int, values, variant: str,
                         limits: dict[str, float]) -> CheapestDifference:
    at = points[points["point"] == p]
    base = _cheapest_by_replication(at[at["variant"] == BASE], limits)
    var = _cheapest_by_replication(at[at["variant"] == variant], limits)
    both = sorted(set(base) & set(var))

    def modal(found):
        tiers = [found[r][0] for r in sorted(found)]
        return max(set(tiers), key=tiers.count) if tiers else None
    return CheapestDifference(
        point=p, values=values, variant=variant, base_tier=modal(base), tier=modal(var),
        difference_usd=IntervalFigure.of([var[r][1] - base[r][1] for r in both]))


def identical_variants(plan: SweepPlan) -> dict[str, str]:
    """Variant -> why it is the base by construction, at every point (else absent)."""
    from .identical import identical_reason
    from .run_one import load_spec

    first = {(r.point, r.variant): r for r in plan.runs if r.replication == 0}
    out = {}
    for variant in plan.variants:
        if variant == BASE:
            continue
        reasons = set()
        for p in range(len(plan.points)):
            reason = identical_reason(load_spec(first[(p, BASE)]),
                                      load_spec(first[(p, variant)]))
            if reason is None:
                break
            reasons.add(reason)
        else:
            out[variant] = "; ".join(sorted(reasons))
    return out
