"""The run's tables, from a tier's columnar result: ``requests.parquet`` rows
(:func:`attempt_rows`), ``windows.parquet`` (:func:`windows_frame`), the websocket
``streams``/``slots`` tables, and the latency table behind the latency plot
(:func:`latency_table`, points on the exact empirical CDF). Columns are read from a tier's
spool one at a time (:func:`spool_column`), so one tier's peak memory stays small.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from ..config.tiers import APIS
from ..model import recorder as rc
from ..model.engine import TierResult
from ..workload.demand import Plan

#: Points of a tier's latency table (:func:`latency_table`): 64 KiB a tier.
LATENCY_POINTS = 8192


def spool_column(sink, name: str) -> np.ndarray:
    """One whole column of a tier's spool, read row group by row group (the same values
    in the same order as a whole read, without the reader's copy of every column)."""
    parts = [c[name] for c in sink.chunks([name])]
    if not parts:
        return np.empty(0, dtype=dict(sink.columns)[name])
    col = parts[0] if len(parts) == 1 else np.concatenate(parts)
    del parts
    release_arrow()
    return col


def release_arrow() -> None:
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
    release_arrow()
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
