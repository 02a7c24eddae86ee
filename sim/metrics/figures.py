"""From a tier's columnar result to the figures a capacity planner reads.

:func:`tier_summary` gives the per-tier entry of ``summary.json``;
:func:`attempts_frame` and :func:`windows_frame` give the Parquet tables (pandas,
categoricals, built once). Definitions:

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

import sys
from datetime import timedelta

import numpy as np
import pandas as pd

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
from .accounts import plan_summary

_THROTTLES = np.array(rc.THROTTLES)

#: Points of a tier's latency table (:func:`latency_table`): 64 KiB a tier.
LATENCY_POINTS = 8192


def _r(x: float, nd: int = 6) -> float:
    return float(round(float(x), nd))


def _column(sink, name: str) -> np.ndarray:
    """One whole column of a tier's spool, read row group by row group (the same values
    in the same order as a whole read, without the reader's copy of every column)."""
    parts = [c[name] for c in sink.chunks([name])]
    if not parts:
        return np.empty(0, dtype=dict(sink.columns)[name])
    col = parts[0] if len(parts) == 1 else np.concatenate(parts)
    del parts
    _release_arrow()
    return col


def _release_arrow() -> None:
    """Hand the Parquet reader's freed buffers back to the system (its allocator keeps
    them otherwise, and the process's peak grows with the run's length)."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


def success_latencies_ms(result: TierResult) -> np.ndarray:
    """End-to-end latency (ms) of each logical request of the tier that succeeded, in
    request order; read chunk by chunk, so only the successes' latencies are held."""
    parts = []
    for q in result.request_sink.chunks(["outcome", "t_first", "t_end"]):
        ok = q["outcome"] == rc.OK
        parts.append((q["t_end"][ok] - q["t_first"][ok]) * 1000.0)
    _release_arrow()
    return np.concatenate(parts) if parts else np.empty(0)


def latency_table(result: TierResult, points: int = LATENCY_POINTS) -> np.ndarray:
    """The tier's latency CDF (successful requests, ms) in at most ``points`` numbers,
    for the plot: :func:`ecdf_table` of :func:`success_latencies_ms`."""
    return ecdf_table(success_latencies_ms(result), points)


def ecdf_table(x: np.ndarray, points: int) -> np.ndarray:
    """An empirical CDF in at most ``points`` numbers.

    All of ``x``, sorted, when it has at most ``points`` values; else the order
    statistics of rank ``ceil(k n / points)``, k = 1..points: the points of the empirical
    CDF at heights k / points, so a line through ``(table[k-1], k / points)`` lies on
    the exact CDF.
    """
    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    if n <= points:
        return x
    ranks = -(-np.arange(1, points + 1, dtype=np.int64) * n // points)  # ceil(k n / points)
    return x[ranks - 1]


def tier_summary(result: TierResult, plan: Plan) -> TierSummary:
    """The per-tier entry of ``summary.json``."""
    sc, tier = plan.scenario, result.tier
    # Only the columns the figures need, each read whole so the sums keep numpy's order;
    # the float columns one at a time (see _cu_columns), so one tier's peak is small.
    a = {n: _column(result.attempt_sink, n) for n in ("outcome", "phantom", "method")}
    req_outcome = _column(result.request_sink, "outcome")
    n_att, n_req = len(a["outcome"]), len(req_outcome)
    counts = np.bincount(a["outcome"], minlength=len(rc.OUTCOMES))
    throttled = int(np.isin(a["outcome"], _THROTTLES).sum())
    req_counts = np.bincount(req_outcome, minlength=len(rc.OUTCOMES))
    n_ok = int(req_counts[rc.OK])
    del req_outcome
    latency = success_latencies_ms(result)
    pct = np.percentile(latency, [50, 95, 99]) if len(latency) else [None] * 3
    latency_mean = latency.mean() if len(latency) else None
    del latency
    reserved = _r(_column(result.attempt_sink, "cu_reserved").sum())
    settled_cols = _settled(result, a, plan)
    connections = _connections(result, a, _column(result.attempt_sink, "stream_wait_s"))
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
        "phantom_throttles": int(a["phantom"].sum()),
        "failure_rate": _r(1.0 - n_ok / n_req if n_req else 0.0),
        "latency_ms": {
            "p50": None if pct[0] is None else _r(pct[0], 3),
            "p95": None if pct[1] is None else _r(pct[1], 3),
            "p99": None if pct[2] is None else _r(pct[2], 3),
            "mean": None if latency_mean is None else _r(latency_mean, 3),
        },
        "cu": {
            "reserved": reserved,
            "settled": settled_cols["settled"],
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
        },
        "retry_budget_refusals": result.retry_budget_refusals,
        "connections": connections,
        "websockets": _websockets(result, settled_cols["total"]),
        "by_method": settled_cols["by_method"],
    }
    summary["meets_slo"], summary["slo_violations"] = slo_check(summary, sc.slo)
    summary["plan"] = plan_summary(result, plan)
    return TierSummary.model_validate(summary)


def _settled(result: TierResult, a: dict[str, np.ndarray], plan: Plan) -> dict:
    """The figures of the ``cu_settled`` column: its total (raw and rounded) and the
    per-method summaries."""
    settled = _column(result.attempt_sink, "cu_settled")
    total = settled.sum()
    return {"total": total, "settled": _r(total), "by_method": _by_method(a, settled, plan)}


def _websockets(result: TierResult, settled_total: float) -> WebsocketsSummary | None:
    ws = result.websockets
    if ws is None:
        return None
    return WebsocketsSummary(**{
        "handshakes": ws.handshakes,
        "wanted_s": _r(ws.wanted_s, 3),
        "connected_s": _r(ws.connected_s, 3),
        "connected_fraction": _r(ws.connected_fraction),
        "events_published": {k: int(v) for k, v in ws.events_published.items()},
        "events_delivered": int(ws.events_delivered),
        "events_lost": int(ws.events_lost),
        "cu_connect": _r(ws.cu_connect),
        "cu_publish": _r(ws.cu_publish),
        "cu_requests": _r(settled_total - ws.cu_connect),
        "sessions": len(ws.sessions["open_s"]),
        "peak_live_slots": int(max(ws.slots["live"], default=0)),
    })


def streams_frame(result: TierResult, plan: Plan) -> pd.DataFrame:
    """One row per websocket session (``streams.parquet``)."""
    ws = result.websockets
    sc = plan.scenario
    if ws is None:
        return pd.DataFrame()
    s = ws.sessions
    n = len(s["open_s"])
    clients = [c.name for c in sc.streams]
    client = s["client"].astype(np.int64)
    start = pd.Timestamp(sc.start)
    return pd.DataFrame({
        "tier": pd.Categorical([result.tier.name] * n),
        "client": pd.Categorical.from_codes(client, categories=clients),
        "stream": pd.Categorical([sc.streams[i].stream for i in client.tolist()]),
        "connection": s["conn"],
        "open": start + pd.to_timedelta(s["open_s"], unit="s"),
        "open_s": s["open_s"],
        "close_s": s["close_s"],
        "closed_how": pd.Categorical.from_codes(s["close_kind"].astype(np.int64),
                                                categories=list(ws.close_kinds)),
        "events_delivered": s["events_delivered"],
        "events_dropped": s["events_dropped"],
        "events_lost_before": s["events_lost_before"],
    })


def slots_frame(result: TierResult) -> pd.DataFrame:
    """The account's websocket slots over time (live, stale, cap), for the plot."""
    ws = result.websockets
    if ws is None:
        return pd.DataFrame()
    sl = ws.slots
    return pd.DataFrame({"tier": result.tier.name, "t": sl["t"], "live": sl["live"],
                         "stale": sl["stale"], "cap": sl["cap"]})


def _connections(result: TierResult, a: dict[str, np.ndarray], stream_wait_s: np.ndarray
                 ) -> ConnectionsSummary:
    wait = stream_wait_s * 1000.0
    waited = wait[wait > 0]
    conn = result.connections
    return ConnectionsSummary.model_validate({
        "opened": conn.opened,
        "peak_active": conn.peak_active,
        "refused_430": int((a["outcome"] == rc.CONN_430).sum()),
        "refused_421": int((a["outcome"] == rc.PROTO_421).sum()),
        "attempts_waiting_for_stream": int(len(waited)),
        "stream_wait_ms": {
            "mean": _r(wait.mean(), 3) if len(wait) else None,
            "p99": _r(np.percentile(wait, 99), 3) if len(wait) else None,
            "max": _r(wait.max(), 3) if len(wait) else None,
            "total_s": _r(wait.sum() / 1000.0, 3),
        },
    })


def _by_method(a: dict[str, np.ndarray], settled: np.ndarray, plan: Plan
               ) -> dict[str, MethodSummary]:
    out = {}
    for m, name in enumerate(plan.tables.methods):
        rows = a["method"] == m
        if not rows.any():
            continue
        outcomes = a["outcome"][rows]
        out[name] = MethodSummary(
            attempts=int(rows.sum()),
            ok=int((outcomes == rc.OK).sum()),
            throttled=int(np.isin(outcomes, _THROTTLES).sum()),
            cu_settled=_r(settled[rows].sum()),
        )
    return out


def slo_check(summary: dict, slo: Slo) -> tuple[bool, list[str]]:
    """Whether a tier's summary (the dict :func:`tier_summary` builds, before it becomes
    a :class:`TierSummary`) meets the SLO, and the violations in words."""
    bad = []
    if summary["throttle_rate"] > slo.max_throttle_rate:
        bad.append(f"throttle rate {summary['throttle_rate']:.4f} > {slo.max_throttle_rate}")
    if summary["failure_rate"] > slo.max_failure_rate:
        bad.append(f"failure rate {summary['failure_rate']:.4f} > {slo.max_failure_rate}")
    p99 = summary["latency_ms"]["p99"]
    if p99 is None:
        bad.append(f"p99 latency: no successful request (SLO ≤ {slo.p99_latency_ms} ms)")
    elif p99 > slo.p99_latency_ms:
        bad.append(f"p99 latency {p99} ms > {slo.p99_latency_ms} ms")
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


def attempts_frame(result: TierResult, plan: Plan) -> pd.DataFrame:
    """One row per attempt (``requests.parquet``) of a whole tier."""
    a = result.attempts
    return attempt_rows(a, pd.Categorical([result.tier.name] * len(a["outcome"])), plan)


def attempt_rows(a: dict[str, np.ndarray], tier, plan: Plan) -> pd.DataFrame:
    """``requests.parquet`` rows of the attempt columns ``a`` (a whole tier or one chunk);
    ``tier`` is the tier column, already of the rows' length."""
    t = plan.tables
    start = pd.Timestamp(plan.scenario.start)
    n = len(a["outcome"])
    api_of_method = np.asarray(t.method_api)[a["method"]] if n else np.empty(0, dtype=int)
    return pd.DataFrame({
        "tier": tier,
        "request_id": a["request_id"],
        "attempt": a["attempt"],
        "time": start + pd.to_timedelta(a["t_send"], unit="s"),
        "t_send_s": a["t_send"],
        "t_end_s": a["t_end"],
        "latency_ms": (a["t_end"] - a["t_send"]) * 1000.0,
        "source": pd.Categorical.from_codes(a["source"], categories=list(t.sources)),
        "transport": pd.Categorical.from_codes(
            (a["source"] >= len(plan.scenario.sources)).astype(np.int8),
            categories=["http", "websocket"]),
        "api": pd.Categorical.from_codes(api_of_method, categories=list(APIS)),
        "method": pd.Categorical.from_codes(a["method"], categories=list(t.methods)),
        "key": _key_column(a["key"], t.key_pseudonyms),
        "region": pd.Categorical.from_codes(a["region"], categories=list(t.regions)),
        "outcome": pd.Categorical.from_codes(a["outcome"], categories=list(rc.OUTCOMES)),
        "cu_reserved": a["cu_reserved"],
        "cu_settled": a["cu_settled"],
        "retry_after_s": a["retry_after_s"],
        "phantom": a["phantom"],
        "stream_wait_ms": a["stream_wait_s"] * 1000.0,
    })


def _key_column(codes: np.ndarray, pseudonyms: tuple[str, ...]) -> pd.Categorical:
    """Keys as their pseudonyms, one category each.

    An account key and a trace's pseudonym of it are one key: both map to the same
    pseudonym, so codes are merged by pseudonym rather than by table position.
    """
    names = list(dict.fromkeys(pseudonyms))
    merged = np.array([names.index(p) for p in pseudonyms], dtype=np.int64)
    return pd.Categorical.from_codes(merged[codes] if len(codes) else codes, categories=names)


def windows_frame(result: TierResult, plan: Plan) -> pd.DataFrame:
    """One row per 12-second window (``windows.parquet``)."""
    w = result.windows
    n = len(w.start_s)
    start = pd.Timestamp(plan.scenario.start)
    return pd.DataFrame({
        "tier": pd.Categorical([result.tier.name] * n),
        "window": np.arange(n, dtype=np.int64),
        "start_s": np.asarray(w.start_s, dtype=float),
        "start": start + pd.to_timedelta(np.asarray(w.start_s, dtype=float), unit="s"),
        "limit_cu": np.full(n, result.budget_cu),
        "reserved_cu": np.asarray(w.reserved_cu, dtype=float),
        "settled_cu": np.asarray(w.settled_cu, dtype=float),
        "peak_used_cu": np.asarray(w.peak_used_cu, dtype=float),
        "admitted": np.asarray(w.admitted, dtype=np.int64),
        "throttled": np.asarray(w.throttled, dtype=np.int64),
        "phantom": np.asarray(w.phantom, dtype=np.int64),
    })
