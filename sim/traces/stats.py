"""``capsim trace stats``: what a canonical trace asks of the service.

The trace is read in chunks. Windows are the spec's 12-second CU windows aligned to
multiples of 12 s since the epoch (``time_ns // 12e9``); the per-window figures (mean,
p50, p95, max) run over *every* window from the first request's to the last request's,
empty ones counting as 0. Percentiles use numpy's default (linear) definition.

CU per row, in order of preference:

1. ``recorded``: the trace's ``cu`` column;
2. ``settled``: a sizing request with ``gas_used`` and ``items`` known:
   ``items x item_base_cu + gas_used x cu_per_gas``;
3. ``reserved``: what the request reserves under the default pricing assumptions
   (:mod:`sim.config.pricing`): the RPC method's cost; for sizing
   ``sum(item_base_cu + profile_gas_cap x cu_per_gas)`` over its items; a websocket
   handshake (streams or monitoring) the connect cost. Other Search paths have no
   pricing assumption and count 0 CU (reported).

Rows none of these can price (a sizing row without profiles, or with a profile the
pricing does not know) count 0 CU and are reported as unpriced. The peak window is the
largest per-window sum of these figures, and the output says which figures it is made
of. Because the window limiter sees reservations, not settlements (spec 8.2), a second
peak uses ``recorded``, else ``reserved``, for every row (``peak_reserve_view``).

The recommended tier is the smallest of :data:`sim.config.tiers.CATALOG` whose budget covers
the peak and whose APIs include every API seen (:func:`sim.config.tiers.smallest_tier_for`);
when the trace has websocket handshakes, only tiers with a websocket cap of at least 1
are considered (spec 8.3: Search-only and RPC-only selections allow none).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config.pricing import DEFAULT_METHOD_KEY, Pricing, default_pricing_table
from ..config.tiers import CATALOG, smallest_tier_for
from .schema import RPC, SEARCH, SIZE_METHOD, STREAMS, WEBSOCKET_METHODS, open_trace

WINDOW_NS = 12_000_000_000
BASES = ("recorded", "settled", "reserved")
_COLUMNS = ["time_ns", "api", "method", "key", "region", "status", "items", "profiles",
            "gas_used", "cu"]


def iso(ns: int) -> str:
    """``2024-05-01T12:00:00.250Z`` (millisecond precision) for ns since the epoch."""
    dt = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{(ns % 1_000_000_000) // 1_000_000:03d}Z"


def _np(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False)


def _dict_parts(col) -> tuple[np.ndarray, list]:
    """``(codes, values)`` of a (possibly plain) string column; null -> code -1."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    codes = _np(pc.fill_null(col.indices, -1)).astype(np.int64)
    return codes, col.dictionary.to_pylist()


class _Pricer:
    """Per-row CU figures for one chunk, under one :class:`Pricing`."""

    def __init__(self, pricing: Pricing) -> None:
        self.p = pricing
        self._sizing: dict[str, float] = {}

    def reserve_of(self, api: str, method: str) -> tuple[float, str | None]:
        """CU reserved by a non-sizing request; ``(cost, note)``."""
        if api == RPC:
            return self.p.rpc.cost(method), None
        if api == STREAMS or method in WEBSOCKET_METHODS:
            return self.p.websocket.connect_cu, None
        return 0.0, "other Search paths (no pricing assumption, 0 CU)"

    def sizing_reserve(self, profiles: str) -> float:
        if profiles not in self._sizing:
            try:
                self._sizing[profiles] = sum(self.p.sizing.item_reserve(x)
                                             for x in profiles.split(","))
            except KeyError:
                self._sizing[profiles] = math.nan
        return self._sizing[profiles]

    def figures(self, batch: pa.RecordBatch, notes: Counter) -> tuple[np.ndarray, ...]:
        """``(primary, reserve_view, basis)``; basis 0/1/2 = recorded/settled/reserved,
        3 = unpriced."""
        n = batch.num_rows
        api_codes, api_values = _dict_parts(batch.column("api"))
        m_codes, m_values = _dict_parts(batch.column("method"))
        combo = api_codes * max(len(m_values), 1) + m_codes
        uniq, inverse = np.unique(combo, return_inverse=True)
        costs = np.empty(len(uniq))
        sizing_u = np.zeros(len(uniq), dtype=bool)
        for j, c in enumerate(uniq):
            api = api_values[c // max(len(m_values), 1)]
            method = m_values[c % max(len(m_values), 1)]
            sizing_u[j] = api == SEARCH and method == SIZE_METHOD
            costs[j], note = (math.nan, None) if sizing_u[j] else self.reserve_of(api, method)
            if note:
                notes[note] += int((inverse == j).sum())
        reserve = costs[inverse]
        sizing = sizing_u[inverse]
        if sizing.any():
            p_codes, p_values = _dict_parts(batch.column("profiles"))
            table = np.array([self.sizing_reserve(v) for v in p_values] + [math.nan])
            reserve = np.where(sizing, table[p_codes], reserve)
        items = batch.column("items")
        gas = batch.column("gas_used")
        settled_ok = sizing & _np(items.is_valid()) & _np(gas.is_valid())
        settled = (_np(pc.fill_null(items, 0)).astype(np.float64) * self.p.sizing.item_base_cu
                   + _np(pc.fill_null(gas, 0)).astype(np.float64) * self.p.sizing.cu_per_gas)
        cu_col = batch.column("cu")
        recorded_ok = _np(cu_col.is_valid())
        recorded = _np(pc.fill_null(cu_col, 0.0))
        basis = np.full(n, 3, dtype=np.int8)
        basis[np.isfinite(reserve)] = 2
        basis[settled_ok] = 1
        basis[recorded_ok] = 0
        primary = np.select([basis == 0, basis == 1, basis == 2],
                            [recorded, settled, np.nan_to_num(reserve)], 0.0)
        view = np.where(recorded_ok, recorded, np.nan_to_num(reserve))
        unpriced = basis == 3
        if unpriced.any():
            notes["sizing rows without a priced profile (0 CU)"] += int(unpriced.sum())
        return primary, view, basis


def _percentile(values: np.ndarray, zeros: int, q: float) -> float:
    """numpy's linear percentile of ``values`` plus ``zeros`` zeros (values are >= 0)."""
    total = len(values) + zeros
    if total == 0:
        return 0.0
    ordered = np.sort(values)

    def at(i: int) -> float:
        return 0.0 if i < zeros else float(ordered[i - zeros])

    h = (total - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, total - 1)
    return at(lo) + (h - lo) * (at(hi) - at(lo))


def _summary(values: np.ndarray, zeros: int) -> dict[str, float]:
    total = len(values) + zeros
    return {"mean": float(values.sum() / total) if total else 0.0,
            "p50": _percentile(values, zeros, 50), "p95": _percentile(values, zeros, 95),
            "max": float(values.max()) if len(values) else 0.0}


def _count_dict(counter: Counter) -> dict:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def trace_stats(path: str | os.PathLike, *, pricing: Pricing | None = None,
                chunk_rows: int = 1 << 20) -> dict[str, Any]:
    """Summary of the canonical trace at ``path`` (see the module doc) as a plain dict."""
    pricing = pricing or Pricing.model_validate(default_pricing_table())
    pricer = _Pricer(pricing)
    pf = open_trace(path)
    counts = {name: Counter() for name in ("api", "method", "key", "region", "status")}
    notes: Counter = Counter()
    parts: list[tuple[np.ndarray, ...]] = []
    basis_rows = np.zeros(4, dtype=np.int64)
    rows, t_min, t_max, notifications = 0, None, None, 0
    has_notes = "notification" in pf.schema_arrow.names  # optional column
    try:
        for batch in pf.iter_batches(batch_size=chunk_rows,
                                     columns=_COLUMNS + ["notification"] * has_notes):
            if batch.num_rows == 0:
                continue
            rows += batch.num_rows
            if has_notes:
                notifications += int(pc.sum(pc.fill_null(
                    batch.column("notification").cast("int64"), 0)).as_py() or 0)
            t = _np(batch.column("time_ns")).astype(np.int64)
            t_min = int(t.min()) if t_min is None else min(t_min, int(t.min()))
            t_max = int(t.max()) if t_max is None else max(t_max, int(t.max()))
            for name in ("api", "method", "key", "region"):
                codes, values = _dict_parts(batch.column(name))
                tally = np.bincount(codes + 1, minlength=len(values) + 1)
                for v, c in zip([None, *values], tally, strict=True):
                    if c:
                        counts[name][v if v is not None else "(unknown)"] += int(c)
            for item in pc.value_counts(batch.column("status")).to_pylist():
                label = item["values"] if item["values"] is not None else "(none)"
                counts["status"][label] += item["counts"]
            primary, view, basis = pricer.figures(batch, notes)
            basis_rows += np.bincount(basis, minlength=4)
            w = t // WINDOW_NS
            uw, inv = np.unique(w, return_inverse=True)
            per_basis = [np.bincount(inv, weights=np.where(basis == b, primary, 0.0),
                                     minlength=len(uw)) for b in range(3)]
            parts.append((uw, np.bincount(inv, minlength=len(uw)).astype(np.float64),
                          np.bincount(inv, weights=primary, minlength=len(uw)),
                          np.bincount(inv, weights=view, minlength=len(uw)), *per_basis))
    finally:
        source = (pf.metadata.metadata or {}).get(b"capsim.source_file", b"").decode()
        pf.close()
    out = _assemble(str(path), source, rows, t_min, t_max, parts, counts, notes, basis_rows)
    out["notifications"] = notifications
    default = sorted(m for m in counts["method"] if _is_rpc_name(m)
                     and pricing.rpc.cost_key(m) == DEFAULT_METHOD_KEY)
    if default:
        out["notes"].append(
            f"RPC methods not in [pricing.rpc.method_cu], priced at default_method_cu "
            f"({pricing.rpc.default_method_cu:g} CU): {', '.join(default[:10])}"
            + (f" and {len(default) - 10} more" if len(default) > 10 else "")
            + "; replay them with [sources.replay] method_map or price them there")
    return out


def _is_rpc_name(method: str) -> bool:
    """A recorded JSON-RPC method name (not a sizing/Search path, not a stream)."""
    return " " not in method and method not in WEBSOCKET_METHODS

def _assemble(path: str, source: str, rows: int, t_min, t_max, parts, counts, notes,
              basis_rows) -> dict[str, Any]:
    out: dict[str, Any] = {"file": path, "source_file": source, "rows": rows}
    if rows == 0:
        out.update(time=None, windows=None, peak=None, recommended_tier=None,
                   counts={k: {} for k in counts}, notes=["the trace has no rows"])
        return out
    allw = np.concatenate([p[0] for p in parts])
    uw, inv = np.unique(allw, return_inverse=True)
    sums = [np.bincount(inv, weights=np.concatenate([p[k] for p in parts]),
                        minlength=len(uw)) for k in range(1, 7)]
    n_req, cu, view, rec, sett, res = sums
    n_windows = int(uw[-1] - uw[0] + 1)
    zeros = n_windows - len(uw)
    peak_i = int(np.argmax(cu))
    view_i = int(np.argmax(view))
    peak_parts = {"recorded": float(rec[peak_i]), "settled": float(sett[peak_i]),
                  "reserved": float(res[peak_i])}
    used = [b for b in BASES if peak_parts[b] > 0]
    if len(used) == 1:
        figure = used[0]
    elif not used:
        figure = "none (0 CU)"
    else:
        total = sum(peak_parts.values())
        figure = "mixed: " + ", ".join(f"{b} {100 * peak_parts[b] / total:.0f}%" for b in used)
    apis = set(counts["api"])
    ws_rows = sum(n for m, n in counts["method"].items() if m in WEBSOCKET_METHODS)
    tiers = tuple(t for t in CATALOG if t.ws_cap >= 1) if ws_rows else CATALOG

    def tier(peak: float) -> dict | None:
        t = smallest_tier_for(peak, apis, tiers)
        return None if t is None else {"name": t.name, "cu_per_window": t.cu_per_window,
                                       "ws_cap": t.ws_cap}

    out.update({
        "time": {"first": iso(t_min), "last": iso(t_max), "first_ns": t_min, "last_ns": t_max,
                 "span_s": (t_max - t_min) / 1e9},
        "windows": {"window_s": WINDOW_NS / 1e9, "count": n_windows, "nonempty": len(uw),
                    "requests": _summary(n_req, zeros), "cu": _summary(cu, zeros)},
        "peak": {"window_start": iso(int(uw[peak_i]) * WINDOW_NS),
                 "window_start_ns": int(uw[peak_i]) * WINDOW_NS, "cu": float(cu[peak_i]),
                 "requests": int(n_req[peak_i]), "figure": figure, "cu_by_basis": peak_parts},
        "peak_reserve_view": {"window_start": iso(int(uw[view_i]) * WINDOW_NS),
                              "cu": float(view[view_i])},
        "rows_by_basis": {b: int(basis_rows[i]) for i, b in enumerate(BASES)}
        | {"unpriced": int(basis_rows[3])},
        "websocket_handshakes": ws_rows,
        "recommended_tier": tier(float(cu[peak_i])),
        "recommended_tier_reserve_view": tier(float(view[view_i])),
        "counts": {name: _count_dict(c) for name, c in counts.items()},
        "notes": [f"{what}: {n:,} rows" for what, n in sorted(notes.items())],
        # methods are shown as recorded (eth_call stays eth_call; see method_map)
    })
    return out


def _fmt(x: float) -> str:
    return f"{x:,.1f}" if x != int(x) else f"{int(x):,}"


def render_stats(stats: dict[str, Any], top: int = 10) -> str:
    """Human-readable text of :func:`trace_stats` output (``top`` entries per count)."""
    lines = [f"trace {stats['file']}" + (f" (from {stats['source_file']})"
                                         if stats.get("source_file") else ""),
             f"rows: {stats['rows']:,}"]
    if not stats["rows"]:
        return "\n".join([*lines, "the trace has no rows"])
    t, w, peak = stats["time"], stats["windows"], stats["peak"]
    lines.append(f"time: {t['first']} .. {t['last']} ({t['span_s']:,.1f} s)")
    lines.append(f"12-s windows: {w['count']:,} ({w['nonempty']:,} with requests)")
    for name in ("requests", "cu"):
        s = w[name]
        lines.append(f"  {name + ' / window':<16} mean {_fmt(s['mean'])}  p50 {_fmt(s['p50'])}"
                     f"  p95 {_fmt(s['p95'])}  max {_fmt(s['max'])}")
    lines.append(f"peak window: {peak['window_start']}: {_fmt(peak['cu'])} CU, "
                 f"{peak['requests']:,} requests; CU figure: {peak['figure']}")
    view = stats["peak_reserve_view"]
    if view["cu"] != peak["cu"]:
        lines.append(f"peak counting reservations (what the limiter sees): "
                     f"{_fmt(view['cu'])} CU at {view['window_start']}")
    rb = stats["rows_by_basis"]
    lines.append("rows by CU figure: " + ", ".join(f"{k} {v:,}" for k, v in rb.items()))
    tier = stats["recommended_tier"]
    lines.append("recommended tier: " + (
        f"{tier['name']} ({tier['cu_per_window']:,.0f} CU / 12 s)" if tier
        else "none of the catalog covers the peak and the APIs seen"))
    alt = stats["recommended_tier_reserve_view"]
    if alt != tier:
        lines.append("  counting reservations: " + (alt["name"] if alt else "none fits"))
    if stats.get("notifications"):
        lines.append(f"JSON-RPC notifications (no reply expected): "
                     f"{stats['notifications']:,} rows")
    if stats["websocket_handshakes"]:
        lines.append(f"  ({stats['websocket_handshakes']:,} websocket handshakes: only tiers "
                     "with a websocket cap were considered)")
    for name, counter in stats["counts"].items():
        items = list(counter.items())
        shown = ", ".join(f"{k} {v:,}" for k, v in items[:top])
        more = f", ... {len(items) - top:,} more" if len(items) > top else ""
        lines.append(f"by {name}: {shown}{more}")
    lines += [f"note: {n}" for n in stats["notes"]]
    return "\n".join(lines)
