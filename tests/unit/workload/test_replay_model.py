"""A recorded trace replayed through the model, checked against a direct computation.

With no retries, zero round trip and zero service time, the model's admission is
first-come-first-served per 12-second window; so the admitted CU of every window can be
computed straight from the trace with pandas and a greedy fill, independently of the
simulator.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sim.config.resolved import validate
from sim.config.tiers import Tier
from sim.model import recorder as rc
from sim.model.engine import TierRun
from sim.traces.importers import import_trace
from sim.workload.demand import build_plan


def _trace(tmp_path, n=3000, seed=4):
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2026-01-05T00:00:00Z")
    offsets = np.sort(rng.uniform(0, 600, n))
    cost = rng.choice([10.0, 20.0, 35.0], n)
    method = rng.choice(["svc_call", "svc_pendingBlock"], n, p=[0.8, 0.2])
    df = pd.DataFrame({
        "time_ns": (t0.value + (offsets * 1e9).astype(np.int64)),
        "api": "rpc", "method": method,
        "key": rng.choice(["0123456789abcdef0123456789abcdef",
                           "fedcba9876543210fedcba9876543210"], n),
        "cu": np.where(method == "svc_pendingBlock", 0.0, cost),
    })
    src = tmp_path / "trace.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "trace.parquet"
    import_trace(src, out, fmt="csv")
    return df, out


def _scenario(trace, budget):
    raw = {
        "name": "replay", "duration": 700, "tiers": [], "account": {"keys": ["x"]},
        "regions": [{"name": "r", "rtt_ms": 0}],
        "clients": {"default": {"retry": {"policy": "none"}}},
        "methods": {m: {"service_time": {"dist": "constant", "value": 0.0}}
                    for m in ("svc_call", "svc_pendingBlock")},
        "sources": [{"name": "rec", "key": "x", "trace": str(trace),
                     "replay": {"drop_recorded_retries": False}}],
    }
    return validate(raw, "test"), Tier("T", frozenset({"rpc"}), budget, 0, custom=True)


def test_replayed_trace_admits_what_a_direct_greedy_fill_admits(tmp_path):
    df, trace = _trace(tmp_path)
    budget = 900.0
    loaded, tier = _scenario(trace, budget)
    res = TierRun(build_plan(loaded), tier).run()
    # The direct computation: windows from the first request; greedy, in time order.
    t = (df["time_ns"] - df["time_ns"].min()) / 1e9
    window = (t // 12).astype(int)
    admitted = np.zeros(window.max() + 1)
    for w, c in zip(window, df["cu"], strict=True):
        if c == 0 or admitted[w] + c <= budget:
            admitted[w] += c
    model = np.zeros_like(admitted)
    stats = res.windows
    model[: len(stats.reserved_cu)] = stats.reserved_cu[: len(model)]
    np.testing.assert_allclose(model, admitted)
    assert (res.attempts["outcome"] == rc.RPC_32005).sum() > 100  # the budget really binds
    assert len(res.attempts["outcome"]) == len(df)


def test_replay_under_a_large_budget_admits_everything(tmp_path):
    df, trace = _trace(tmp_path, n=500)
    loaded, tier = _scenario(trace, 1e9)
    res = TierRun(build_plan(loaded), tier).run()
    assert (res.attempts["outcome"] == rc.OK).all()
    assert np.isclose(res.attempts["cu_settled"].sum(), df["cu"].sum())
