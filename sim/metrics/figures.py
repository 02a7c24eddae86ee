"""From a tier's columnar result to the figures a capacity planner reads.

:func:`tier_summary` gives the per-tier entry of ``summary.json`` and :func:`recommend`
the cheapest tier meeting the SLO; the Parquet tables are :mod:`sim.metrics.tables`.
Definitions:

* ``throttle_rate``: attempts refused by the CU window (434, -32005, ws_cu_rejected)
  over all attempts.
* ``phantom_throttles``: throttled attempts that would have fitted had every in-flight
  reservation already settled to its actual cost (the burst cost of reserve-then-settle).
* ``failure_rate``: logical requests whose final outcome is not ``ok``, over requests.
* ``latency_ms``: end to end, first send to final reply, for logical requests that
  succeeded, retries included.
* per window: ``reserved_cu`` (admitted reservations), ``settled_cu`` (what those
  reservations settled to), ``peak_used_cu`` (the limiter's counter at its highest).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from ..config.scenario import Slo
from ..config.tiers import APIS
from ..model import recorder as rc
from ..model.engine import TierResult
from ..results.summary import (
    ConnectionsSummary,
    MethodSummary,
    Recommendation,
    TierSummary,
    WebsocketsSummary,
)
from ..workload.demand import Plan
from .accounts import allowance_lasts_h, plan_summary
from .decided import decide, outside_methods, outside_streams, slo_breaches, websockets_words
from .spool_totals import AttemptTotals, RequestTotals


def _r(x: float, nd: int = 6) -> float:
    return float(round(float(x), nd))


def tier_summary(result: TierResult, plan: Plan,
                 requests: RequestTotals | None = None) -> TierSummary:
    """The per-tier entry of ``summary.json`` (``requests``: the tier's
    :class:`RequestTotals`, if already gathered)."""
    sc, tier = plan.scenario, result.tier
    # One pass over each spool, chunk by chunk: memory does not grow with the run.
    a = AttemptTotals.of(result, len(plan.tables.methods))
    q = requests if requests is not None else RequestTotals.of(result)
    n_att, n_req = a.count, q.count
    counts, req_counts = a.outcomes, q.outcomes
    throttled = int(counts[list(rc.THROTTLES)].sum())
    n_ok = int(req_counts[rc.OK])
    n_lat = q.latency_ms.count
    pct = q.latency_ms.percentile([50, 95, 99]) if n_lat else [None] * 3
    latency_mean = q.latency_sum_ms.value / n_lat if n_lat else None
    settled_total = a.settled.value
    w = result.windows
    price = plan.loaded.pricing.for_tier(tier)
    daily_used = max(result.daily_used.values(), default=0.0)
    ran_out = min(result.daily_exhausted_at.values(), default=None)
    summary = {
        "tier": tier.name,
        "apis": [api for api in APIS if api in tier.apis],
        "cu_per_window": _r(tier.cu_per_window),
        "ws_cap": tier.ws_cap,
        "monthly_usd": price.monthly_usd,
        "requests": n_req,
        "attempts": n_att,
        "retries": n_att - n_req,
        "outcomes": {name: int(c) for name, c in zip(rc.OUTCOMES, counts, strict=True)},
        "request_outcomes": {name: int(c) for name, c in zip(rc.OUTCOMES, req_counts, strict=True)},
        "throttled": throttled,
        "throttle_rate": _r(throttled / n_att if n_att else 0.0),
        "phantom_throttles": a.phantom,
        "failure_rate": _r(1.0 - n_ok / n_req if n_req else 0.0),
        "latency_ms": {
            "p50": None if pct[0] is None else _r(pct[0], 3),
            "p95": None if pct[1] is None else _r(pct[1], 3),
            "p99": None if pct[2] is None else _r(pct[2], 3),
            "mean": None if latency_mean is None else _r(latency_mean, 3),
        },
        "cu": {
            "reserved": _r(a.reserved.value),
            "settled": _r(settled_total),
            "peak_window_reserved": _r(max(w.reserved_cu, default=0.0)),
            "peak_window_settled": _r(max(w.settled_cu, default=0.0)),
            "peak_window_used": _r(max(w.peak_used_cu, default=0.0)),
            "limit": _r(result.budget_cu),
            "windows": len(w.start_s),
            "windows_with_throttles": int(sum(1 for x in w.throttled if x)),
        },
        "daily_allowance": {
            "allowance_cu": result.daily_allowance_cu,
            "used_cu": _r(daily_used),
            "ran_out_at": None if ran_out is None
            else (sc.start + timedelta(seconds=ran_out)).isoformat().replace("+00:00", "Z"),
            "lasts_h": _lasts_h(result, sc.duration_s, plan.covered_s),
        },
        "retry_budget_refusals": result.retry_budget_refusals,
        "connections": _connections(result, a),
        "websockets": _websockets(result, settled_total),
        "by_method": _by_method(a, plan),
    }
    summary["meets_slo"], summary["slo_violations"] = slo_check(
        summary, sc.slo, causes=failure_causes(summary, plan, tier),
        ws_outside=outside_streams(sc.streams, tier), tier=tier)
    summary["decided_by"] = decide(summary, sc.slo, sc.methods, tier, sc.streams)
    summary["plan"] = plan_summary(result, plan)
    return TierSummary.model_validate(summary)


def _lasts_h(result: TierResult, duration_s: float, covered_s: float | None) -> float | None:
    """How long the daily allowance lasts at this run's rate (runs shorter than a day;
    over the seconds with traffic when a replayed trace ends early: ``covered_s``);
    with several accounts, each has its own allowance: the one that lasts least."""
    per_account = [allowance_lasts_h(a.daily_allowance_cu, a.daily_used, duration_s,
                                     covered_s)
                   for a in (result.accounts or [])]
    if len(per_account) > 1:
        known = [h for h in per_account if h is not None]
        return min(known, default=None)
    return allowance_lasts_h(result.daily_allowance_cu, result.daily_used, duration_s,
                             covered_s)


def _websockets(result: TierResult, settled_total: float) -> WebsocketsSummary | None:
    ws = result.websockets
    if ws is None:
        return None
    return WebsocketsSummary(**{
        "handshakes": ws.handshakes,
        "wanted_s": _r(ws.wanted_s, 3),
        "connected_s": _r(ws.connected_s, 3),
        # NaN in the records when nothing was wanted (load scaled every client to 0
        # connections): no fraction, not a number the summary cannot hold.
        "connected_fraction": (_r(ws.connected_fraction) if ws.wanted_s > 0 else None),
        "events_published": {k: int(v) for k, v in ws.events_published.items()},
        "events_delivered": int(ws.events_delivered),
        "events_lost": int(ws.events_lost),
        "cu_connect": _r(ws.cu_connect),
        "cu_publish": _r(ws.cu_publish),
        "cu_requests": _r(settled_total - ws.cu_connect),
        "sessions": len(ws.sessions["open_s"]),
        "peak_live_slots": int(max(ws.slots["live"], default=0)),
    })


def _connections(result: TierResult, a: AttemptTotals) -> ConnectionsSummary:
    wait, n = a.stream_wait_ms, a.stream_wait_ms.count
    conn = result.connections
    return ConnectionsSummary.model_validate({
        "opened": conn.opened,
        "peak_active": conn.peak_active,
        "refused_430": int(a.outcomes[rc.CONN_430]),
        "refused_421": int(a.outcomes[rc.PROTO_421]),
        "attempts_waiting_for_stream": n - wait.count_at_lower_bound,
        "stream_wait_ms": {
            "mean": _r(a.stream_wait_sum_ms.value / n, 3) if n else None,
            "p99": _r(wait.percentile([99])[0], 3) if n else None,
            "max": _r(a.stream_wait_max_ms, 3) if n else None,
            "total_s": _r(a.stream_wait_sum_ms.value / 1000.0, 3),
        },
    })


def _by_method(a: AttemptTotals, plan: Plan) -> dict[str, MethodSummary]:
    out = {}
    for m, name in enumerate(plan.tables.methods):
        if not a.by_method_outcome[m].any():
            continue
        outcomes = a.by_method_outcome[m]
        out[name] = MethodSummary(
            attempts=int(outcomes.sum()),
            ok=int(outcomes[rc.OK]),
            throttled=int(outcomes[list(rc.THROTTLES)].sum()),
            cu_settled=_r(a.settled_by_method[m].value),
        )
    return out


_FAILURES = {
    "434": "throttled by the 12-second CU window (434)",
    "-32005": "throttled by the 12-second CU window (-32005)",
    "ws_cu_rejected": "websocket handshakes refused by the 12-second CU window",
    "401": "401: a key of no account, or revoked",
    "oversized": "oversized: one request costs more than the window's budget",
    "421": "421: sent to a hostname of another API",
    "430": "430: too many connections or new connections per second",
    "435": "435: every websocket slot taken",
}


def failure_causes(summary: dict, plan: Plan, tier) -> str | None:
    """Why a tier's requests failed, in words, the largest share first: "402 for 96.6 %
    of requests: svc_search uses search, not in this tier's selection (rpc)"; None when
    every request succeeded."""
    n = summary["requests"]
    counts = {k: v for k, v in summary["request_outcomes"].items() if k != "ok" and v}
    if not n or not counts:
        return None
    methods = plan.scenario.methods
    parts = []
    for name, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        share = f"{count / n:.1%} of requests"
        if name == "402":
            outside = outside_methods(summary, methods, tier)
            why = []
            if outside:
                apis = sorted({methods[m].api for m in outside})
                why.append(f"the API is not in the selection ({', '.join(outside)} use "
                           f"{', '.join(apis)}; this tier has {', '.join(summary['apis'])})")
            if summary["daily_allowance"]["ran_out_at"] is not None:
                why.append("the daily allowance ran out at "
                           f"{summary['daily_allowance']['ran_out_at']}")
            parts.append(f"402 for {share}: " + ("; ".join(why) or "payment required"))
        else:
            parts.append(f"{_FAILURES.get(name, name)}: {share}")
    return "; ".join(parts)


def slo_check(summary: dict, slo: Slo, causes: str | None = None,
              ws_outside: Sequence[str] = (), tier=None) -> tuple[bool, list[str]]:
    """Whether a tier's summary (the dict :func:`tier_summary` builds, before it becomes
    a :class:`TierSummary`) meets the SLO, and the violations in words (``causes``: why
    requests failed, see :func:`failure_causes`, named with the failure rate). The
    comparisons are :func:`sim.metrics.decided.slo_breaches`'."""
    bad = []
    for b in slo_breaches(summary, slo, ws_outside):
        if b.criterion == "throttle_rate":
            bad.append(f"throttle rate {b.value:.4f} > {b.limit}")
        elif b.criterion == "failure_rate":
            bad.append(f"failure rate {b.value:.4f} > {b.limit}"
                       + (f" ({causes})" if causes else ""))
        elif b.criterion == "p99_latency":
            bad.append(f"p99 latency: no successful request (SLO ≤ {b.limit} ms)"
                       if b.value is None else f"p99 latency {b.value} ms > {b.limit} ms")
        elif b.criterion == "websockets":
            bad.append("websocket sessions: " + websockets_words(ws_outside, tier, b.value))
        else:
            bad.append(f"daily allowance lasts {b.value:.1f} h at this rate (< 24 h; "
                       "[slo] allowance_must_last_day)")
    return not bad, bad


def recommend(tiers: list[TierSummary]) -> Recommendation:
    """The cheapest tier that meets the SLO (price, then budget), with the reason.

    With several accounts the price is the plan's (every account at its own tier)."""
    meeting = [t for t in tiers if t.meets_slo]
    if not meeting:
        return Recommendation(tier=None, reason="no simulated tier meets the SLO")

    def price(t: TierSummary) -> float | None:
        return t.plan.monthly_usd if t.plan is not None else t.monthly_usd

    priced = [t for t in meeting if price(t) is not None]
    pool = priced or meeting
    best = min(pool, key=lambda t: (price(t) if priced else 0, t.cu_per_window))
    what = "plan " if best.plan is not None else ""
    basis = f"cheapest {what}at ${price(best):,.0f}/month" if priced else "smallest budget"
    return Recommendation(tier=best.tier,
                          reason=f"{basis} of {len(meeting)} tier(s) meeting the SLO")
