"""The metrics the CI gate compares: how each is read from a tier's typed summary,
which way is worse, and its default tolerance.

Rates (throttle, failure, phantom throttles, meeting the SLO) get an *absolute*
tolerance in rate units; latency, CU and cost a *relative* one (a fraction of the
baseline: 0.1 is 10 %); the allowance's run-out time an absolute one in seconds.
A value of ``None`` is "undefined" (a latency with no successful request) or, for the
run-out time and the hours the allowance lasts, "never ran out" / "no allowance".

Besides the per-tier :data:`METRICS`, two metrics have another scope:
:data:`METHOD_CU_PER_DAY` is read per method of each tier (the baseline keeps one figure
per method) and :data:`RECOMMENDED_MONTHLY_USD` once per run (the recommended tier's
price). All of them are tolerance names (:data:`BY_NAME`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # pragma: no cover
    # Annotations only: the scenario's [check] table imports this module, and
    # `capsim validate` need not build the summary models.
    from .summary import RunSummary, TierSummary

Worse = Literal["higher", "lower"]
Kind = Literal["absolute", "relative"]


@dataclass(frozen=True)
class Metric:
    """One compared figure of a tier."""

    name: str
    label: str
    unit: str
    read: Callable[[RunSummary, TierSummary], float | None]
    worse: Worse
    kind: Kind
    tolerance: float
    none_means: Literal["undefined", "never"] = "undefined"
    scope: Literal["tier", "method", "run"] = "tier"

    def describe_tolerance(self, value: float) -> str:
        """``±10 %`` or ``±0.005`` (in the metric's unit)."""
        if self.kind == "relative":
            return f"±{value * 100:g} %"
        if self.unit == "s":
            return f"±{value / 3600:g} h"
        if self.unit == "USD":
            return f"±${value:g}"
        return f"±{value:g}{' ' + self.unit if self.unit and self.unit != 'rate' else ''}"


def _ran_out_s(run: RunSummary, tier: TierSummary) -> float | None:
    """Seconds from the run's start to the allowance running out (None: never)."""
    at = tier.daily_allowance.ran_out_at
    if at is None:
        return None
    return (datetime.fromisoformat(at) - datetime.fromisoformat(run.start)).total_seconds()


def _per_request(run: RunSummary, tier: TierSummary) -> float | None:
    # Per *successful* request: failed ones settle little or nothing, so per request
    # the figure would fall as throttling rises and read as an improvement.
    ok = tier.request_outcomes.get("ok", 0)
    return tier.cu.settled / ok if ok else None


def _cu_per_day(run: RunSummary, tier: TierSummary) -> float | None:
    # What the bill and the daily allowance follow: every CU charged (settled by requests
    # and handshakes, spent by billed publishes), at the run's rate, per day. A change in
    # traffic moves it one for one, where the peak window and the rates may not move.
    if run.duration_s <= 0:
        return None
    publish = tier.websockets.cu_publish if tier.websockets is not None else 0.0
    return (tier.cu.settled + publish) * 86_400.0 / run.duration_s


def _allowance_lasts_h(run: RunSummary, tier: TierSummary) -> float | None:
    # Hours the daily allowance lasts at the run's rate of charged CU: the summary's own
    # figure for runs under a day (the account whose allowance lasts least), else the
    # allowance over the charged CU per hour. None: no allowance, or nothing charged.
    allowance = tier.daily_allowance
    if allowance.lasts_h is not None:
        return allowance.lasts_h
    per_day = _cu_per_day(run, tier)
    if allowance.allowance_cu is None or not per_day:
        return None
    return allowance.allowance_cu * 24.0 / per_day


def method_cu_per_day(run: RunSummary, tier: TierSummary) -> dict[str, float]:
    """CU settled per day by each method (at the run's rate); a method the run never
    called is absent (its figure is 0)."""
    if run.duration_s <= 0:
        return {}
    return {name: m.cu_settled * 86_400.0 / run.duration_s
            for name, m in sorted(tier.by_method.items())}


def _phantom_rate(run: RunSummary, tier: TierSummary) -> float:
    return tier.phantom_throttles / tier.attempts if tier.attempts else 0.0


METRICS: tuple[Metric, ...] = (
    Metric("throttle_rate", "throttle rate", "rate",
           lambda r, t: t.throttle_rate, "higher", "absolute", 0.005),
    Metric("failure_rate", "failure rate", "rate",
           lambda r, t: t.failure_rate, "higher", "absolute", 0.001),
    Metric("phantom_throttle_rate", "phantom throttles per attempt", "rate",
           _phantom_rate, "higher", "absolute", 0.005),
    Metric("latency_p50_ms", "p50 latency (ms)", "ms",
           lambda r, t: t.latency_ms.p50, "higher", "relative", 0.10),
    Metric("latency_p95_ms", "p95 latency (ms)", "ms",
           lambda r, t: t.latency_ms.p95, "higher", "relative", 0.10),
    Metric("latency_p99_ms", "p99 latency (ms)", "ms",
           lambda r, t: t.latency_ms.p99, "higher", "relative", 0.15),
    Metric("cu_per_request", "CU settled per successful request", "CU",
           _per_request, "higher", "relative", 0.05),
    Metric("cu_per_day", "CU charged per day", "CU",
           _cu_per_day, "higher", "relative", 0.02),
    Metric("allowance_lasts_h", "daily allowance lasts at this rate (h)", "h",
           _allowance_lasts_h, "lower", "relative", 0.02, none_means="never"),
    Metric("peak_window_cu", "peak window CU", "CU",
           lambda r, t: t.cu.peak_window_used, "higher", "relative", 0.10),
    Metric("allowance_run_out_s", "daily allowance runs out after", "s",
           _ran_out_s, "lower", "absolute", 900.0, none_means="never"),
    Metric("monthly_usd", "monthly cost", "USD",
           lambda r, t: t.monthly_usd, "higher", "relative", 0.0),
    Metric("meets_slo", "meets the SLO", "rate",
           lambda r, t: 1.0 if t.meets_slo else 0.0, "lower", "absolute", 0.0),
)
"""Every per-tier metric, in report order. The recommended tier is compared per run."""

METHOD_CU_PER_DAY = Metric("method_cu_per_day", "CU per day", "CU",
                           lambda r, t: None, "higher", "relative", 0.05, scope="method")
"""CU settled per day by one method (:func:`method_cu_per_day` reads them all); 5 %:
one method's share is noisier than the total."""

RECOMMENDED_MONTHLY_USD = Metric("recommended_monthly_usd", "recommended tier's monthly price",
                                 "USD", lambda r, t: None, "higher", "absolute", 0.0,
                                 scope="run")
"""The recommended tier's monthly price (from the baseline's tiers); any rise fails."""

BY_NAME: dict[str, Metric] = {m.name: m for m in (*METRICS, METHOD_CU_PER_DAY,
                                                  RECOMMENDED_MONTHLY_USD)}
METRIC_NAMES: tuple[str, ...] = tuple(BY_NAME)
