"""trace stats: windows, peak, CU figures and the recommended tier on crafted traces."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import pytest
from crafted_traces import T0, S, write_trace

from sim.core.errors import CapsimError
from sim.traces.importers import import_trace
from sim.traces.stats import render_stats, trace_stats

ROOT = Path(__file__).resolve().parents[3]


# Default pricing: svc_call 20, svc_pendingBlock 0, sizing item base 10 + cap x 1e-5 with
# caps fast 1e6 / deep 1e7, websocket connect 50.
#   window 0 [0, 12):  10 svc_call (reserved 20 each) + 2 svc_pendingBlock (0)  = 200 CU
#   window 1 [12, 24): sizing deep,deep,fast reserved 110+110+20 = 240 at t = 12.000
#                      sizing fast,fast with gas 500,000 settles to 2x10 + 5 = 25  = 265 CU
#   window 2 [24, 36): empty                                                   =   0 CU
#   window 3 [36, 48): one svc_call with recorded cu 5000                      = 5000 CU
CRAFTED = (
    [{"t": float(i)} for i in range(10)]
    + [{"t": 11.999, "method": "svc_pendingBlock"}] * 2
    + [{"t": 12.0, "api": "search", "method": "POST /v1/size", "items": 3,
        "profiles": "deep,deep,fast"},
       {"t": 13.0, "api": "search", "method": "POST /v1/size", "items": 2,
        "profiles": "fast,fast", "gas_used": 500_000},
       {"t": 40.0, "cu": 5000.0, "status": 200}]
)


def test_peak_window_and_distribution_on_a_crafted_trace(tmp_path):
    s = trace_stats(write_trace(tmp_path / "t.parquet", CRAFTED, chunk_rows=4))
    assert s["rows"] == 15
    assert s["windows"]["count"] == 4 and s["windows"]["nonempty"] == 3
    req, cu = s["windows"]["requests"], s["windows"]["cu"]
    # requests per window [12, 2, 0, 1]; CU per window [200, 265, 0, 5000]
    assert req == pytest.approx({"mean": 3.75, "p50": 1.5, "p95": 10.5, "max": 12})
    assert cu == pytest.approx({"mean": 1366.25, "p50": 232.5, "p95": 4289.75, "max": 5000})
    peak = s["peak"]
    assert peak["window_start_ns"] == T0 + 36 * S and peak["cu"] == 5000
    assert peak["figure"] == "recorded" and peak["requests"] == 1
    assert s["rows_by_basis"] == {"recorded": 1, "settled": 1, "reserved": 13, "unpriced": 0}
    assert s["recommended_tier"]["name"] == "RPC + Search"
    assert s["time"]["span_s"] == 40.0
    assert s["counts"]["method"] == {"svc_call": 11, "svc_pendingBlock": 2, "POST /v1/size": 2}
    assert s["counts"]["status"] == {"(none)": 14, 200: 1}


def test_reserve_view_counts_reservations_instead_of_settlements(tmp_path):
    rows = [{"t": 1.0, "api": "search", "method": "POST /v1/size", "items": 1,
             "profiles": "deep", "gas_used": 100_000}]
    s = trace_stats(write_trace(tmp_path / "t.parquet", rows))
    assert s["peak"]["cu"] == pytest.approx(11.0) and s["peak"]["figure"] == "settled"
    assert s["peak_reserve_view"]["cu"] == pytest.approx(110.0)
    assert "reservations" in render_stats(s)


@pytest.mark.parametrize(("extra", "tier"), [
    ([], "RPC + Search"),
    ([{"t": 2.0, "api": "streams", "method": "pending-txs", "status": 101}], "All 3 APIs"),
    ([{"t": 41.0, "cu": 3500.0}], "Professional bundle"),
    ([{"t": 41.0, "cu": 96_000.0}], None),
])
def test_recommended_tier(tmp_path, extra, tier):
    s = trace_stats(write_trace(tmp_path / "t.parquet", CRAFTED + extra))
    got = s["recommended_tier"]
    assert (got["name"] if got else None) == tier


def test_a_monitoring_websocket_needs_a_tier_with_a_websocket_cap(tmp_path):
    sizing = {"t": 1.0, "api": "search", "method": "POST /v1/size", "items": 1,
              "profiles": "fast"}
    monitor = {"t": 2.0, "api": "search", "method": "/v1/monitoring/unhealthy/ws"}
    alone = trace_stats(write_trace(tmp_path / "a.parquet", [sizing]))
    assert alone["recommended_tier"]["name"] == "Search"
    both = trace_stats(write_trace(tmp_path / "b.parquet", [sizing, monitor]))
    assert both["recommended_tier"]["name"] == "Streams + Search"
    assert both["peak"]["cu"] == pytest.approx(20 + 50)


def test_unpriced_rows_are_reported(tmp_path):
    rows = [{"t": 1.0, "api": "search", "method": "POST /v1/size", "items": 1,
             "profiles": "turbo"},
            {"t": 2.0, "api": "search", "method": "GET /v1/usage"}]
    s = trace_stats(write_trace(tmp_path / "t.parquet", rows))
    assert s["rows_by_basis"]["unpriced"] == 1
    assert any("priced profile" in n for n in s["notes"])
    assert any("other Search paths" in n for n in s["notes"])


def test_stats_peak_matches_a_direct_computation_on_the_sample(tmp_path):
    pricing = tomllib.loads((ROOT / "sim" / "data" / "pricing.toml").read_text())
    df = pd.read_csv(ROOT / "workloads" / "traces" / "sample.csv")
    ns = pd.to_datetime(df["timestamp"], utc=True).dt.as_unit("ns").astype("int64")
    sz = pricing["sizing"]

    def cu(row):
        if pd.notna(row["cu"]):
            return row["cu"]
        if row["api"] == "rpc":
            return pricing["rpc"]["method_cu"].get(row["method"], 10)
        if row["method"] == "POST /v1/size":
            if pd.notna(row["gas_used"]):
                return row["items"] * sz["item_base_cu"] + row["gas_used"] * sz["cu_per_gas"]
            return sum(sz["item_base_cu"] + sz["profile_gas_cap"][p] * sz["cu_per_gas"]
                       for p in row["profiles"].split(","))
        return pricing["websocket"]["connect_cu"]

    per_window = df.apply(cu, axis=1).groupby(ns // (12 * S)).sum()
    out = tmp_path / "s.parquet"
    import_trace(ROOT / "workloads" / "traces" / "sample.csv", out)
    s = trace_stats(out)
    assert s["peak"]["cu"] == pytest.approx(per_window.max())
    assert s["peak"]["window_start_ns"] == per_window.idxmax() * 12 * S
    assert s["rows"] == len(df)
    assert s["windows"]["count"] == per_window.index.max() - per_window.index.min() + 1


def test_stats_refuses_a_file_that_is_not_a_canonical_trace(tmp_path):
    with pytest.raises(CapsimError, match="capsim trace import"):
        trace_stats(ROOT / "workloads" / "traces" / "sample.csv")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "x.parquet")
    with pytest.raises(CapsimError, match="trace_version"):
        trace_stats(tmp_path / "x.parquet")


def test_an_empty_trace(tmp_path):
    s = trace_stats(write_trace(tmp_path / "t.parquet", []))
    assert s["rows"] == 0 and s["recommended_tier"] is None
    assert "no rows" in render_stats(s)
