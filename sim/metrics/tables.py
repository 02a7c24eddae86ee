"""The run's tables, from a tier's columnar result: ``requests.parquet`` rows
(:func:`attempt_columns`; as pandas :func:`attempt_rows`, as Arrow :class:`AttemptTables`),
``windows.parquet`` (:func:`windows_frame`), the websocket ``streams``/``slots`` tables,
and the latency table behind the latency plot (:func:`latency_table`, points on the exact
empirical CDF, from the request spool read chunk by chunk).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..config.tiers import APIS
from ..model import recorder as rc
from ..model.engine import TierResult
from ..workload.demand import Plan
from .spool_totals import RequestTotals
from .stream_stats import OrderStatistics

#: Points of a tier's latency table (:func:`latency_table`): 64 KiB a tier.
LATENCY_POINTS = 8192


def latency_table(result: TierResult, points: int = LATENCY_POINTS,
                  requests: RequestTotals | None = None) -> np.ndarray:
    """The tier's latency CDF (successful requests, ms) in at most ``points`` numbers,
    for the plot (``requests``: the tier's :class:`RequestTotals`, if already gathered)."""
    q = requests if requests is not None else RequestTotals.of(result)
    return q.latency_ms.ecdf_table(points)


def ecdf_table(x: np.ndarray, points: int) -> np.ndarray:
    """An empirical CDF of ``x`` in at most ``points`` numbers
    (:meth:`OrderStatistics.ecdf_table`)."""
    stats = OrderStatistics()
    stats.add(np.asarray(x, dtype=float))
    return stats.ecdf_table(points)


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


class Coded(NamedTuple):
    """A categorical column: codes into ``categories``."""

    codes: np.ndarray
    categories: list[str]


def attempt_columns(a: dict[str, np.ndarray], tier: int, tier_names: list[str],
                    plan: Plan) -> dict[str, np.ndarray | Coded]:
    """``requests.parquet``'s columns, in order, of the attempt columns ``a`` (a whole tier
    or one chunk) of tier ``tier_names[tier]``: numbers, or :class:`Coded` categoricals;
    ``time`` is the send time in seconds from the scenario's start. The one layout
    :func:`attempt_rows` (pandas) and :class:`AttemptTables` (Arrow) render."""
    t = plan.tables
    n = len(a["outcome"])
    api_of_method = np.asarray(t.method_api)[a["method"]] if n else np.empty(0, dtype=int)
    return {
        "tier": Coded(np.full(n, tier, dtype=np.int8), list(tier_names)),
        "request_id": a["request_id"],
        "attempt": a["attempt"],
        "time": a["t_send"],
        "t_send_s": a["t_send"],
        "t_end_s": a["t_end"],
        "latency_ms": (a["t_end"] - a["t_send"]) * 1000.0,
        "source": Coded(a["source"], list(t.sources)),
        "transport": Coded((a["source"] >= len(plan.scenario.sources)).astype(np.int8),
                           ["http", "websocket"]),
        "api": Coded(api_of_method, list(APIS)),
        "method": Coded(a["method"], list(t.methods)),
        "key": _key_column(a["key"], t.key_pseudonyms),
        "region": Coded(a["region"], list(t.regions)),
        "outcome": Coded(a["outcome"], list(rc.OUTCOMES)),
        "cu_reserved": a["cu_reserved"],
        "cu_settled": a["cu_settled"],
        "retry_after_s": a["retry_after_s"],
        "phantom": a["phantom"],
        "stream_wait_ms": a["stream_wait_s"] * 1000.0,
    }


def attempt_rows(a: dict[str, np.ndarray], tier: int, tier_names: list[str],
                 plan: Plan) -> pd.DataFrame:
    """``requests.parquet`` rows of the attempt columns ``a`` (a whole tier or one chunk)
    of tier ``tier_names[tier]``, as a pandas frame (:func:`attempt_columns`)."""
    start = pd.Timestamp(plan.scenario.start)
    frame = {}
    for name, col in attempt_columns(a, tier, tier_names, plan).items():
        if isinstance(col, Coded):
            col = pd.Categorical.from_codes(col.codes, categories=col.categories)
        elif name == "time":
            col = start + pd.to_timedelta(col, unit="s")
        frame[name] = col
    return pd.DataFrame(frame)


class AttemptTables:
    """``requests.parquet``'s rows as Arrow tables built from the attempt columns directly
    (:func:`attempt_columns`), with no pandas frame per chunk.

    A table is the one ``pa.Table.from_pandas(attempt_rows(...), preserve_index=False)``
    gives, its pandas metadata included (so ``pd.read_parquet`` returns the same frame):
    categoricals are dictionary columns of every category, ``time`` is a UTC timestamp in
    nanoseconds converted as pandas converts float seconds, NaN in a float column is
    null. The schema is pandas' own, read once off a one-row frame whose send time is not
    a whole second (pandas gives whole seconds a coarser unit; here every chunk's time is
    in nanoseconds, so a file's column type no longer depends on its values).
    """

    def __init__(self, plan: Plan, tier_names: list[str]) -> None:
        self.plan, self.tier_names = plan, tier_names
        self._schema = None
        self._dictionaries: dict[str, object] = {}
        start = pd.Timestamp(plan.scenario.start).as_unit("ns")
        self._start_ns = int(start.value)

    def schema(self, a: dict[str, np.ndarray]):
        """The tables' schema, from a one-row frame of the (non-empty) columns ``a``."""
        import pyarrow as pa

        if self._schema is None:
            one = {n: v[:1] for n, v in a.items()}
            one["t_send"] = np.array([0.5])
            frame = attempt_rows(one, 0, self.tier_names, self.plan)
            self._schema = pa.Schema.from_pandas(frame, preserve_index=False)
        return self._schema

    def table(self, a: dict[str, np.ndarray], tier: int):
        """The rows of the attempt columns ``a`` (at least one row) of tier ``tier``."""
        import pyarrow as pa

        schema = self.schema(a)
        arrays = []
        for field, (name, col) in zip(schema, attempt_columns(a, tier, self.tier_names,
                                                               self.plan).items(), strict=True):
            if isinstance(col, Coded):
                arrays.append(pa.DictionaryArray.from_arrays(
                    pa.array(col.codes.astype(field.type.index_type.to_pandas_dtype(),
                                              copy=False)),
                    self._dictionary(name, field.type.value_type, col.categories)))
            elif name == "time":
                ns = pd.to_timedelta(col, unit="s").as_unit("ns").asi8 + self._start_ns
                arrays.append(pa.array(ns, type=field.type))
            else:
                arrays.append(pa.array(col, type=field.type, from_pandas=True))
        return pa.Table.from_arrays(arrays, schema=schema)

    def _dictionary(self, name: str, value_type, categories: list[str]):
        import pyarrow as pa

        if name not in self._dictionaries:
            self._dictionaries[name] = pa.array(categories, type=value_type)
        return self._dictionaries[name]


def _key_column(codes: np.ndarray, pseudonyms: tuple[str, ...]) -> Coded:
    """Keys as their pseudonyms, one category each.

    An account key and a trace's pseudonym of it are one key: both map to the same
    pseudonym, so codes are merged by pseudonym rather than by table position.
    """
    names = list(dict.fromkeys(pseudonyms))
    merged = np.array([names.index(p) for p in pseudonyms], dtype=np.int64)
    return Coded(merged[codes] if len(codes) else codes, names)


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
