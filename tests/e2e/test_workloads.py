"""The ready scenarios in workloads/ validate, run, and show what they were written for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from whole_demand import whole_demand

from sim.config.resolved import load
from sim.model import recorder as rc
from sim.runner.run import run
from sim.workload.demand import build_plan

WORKLOADS = Path(__file__).resolve().parents[2] / "workloads"


@pytest.mark.parametrize("path", sorted(WORKLOADS.glob("*.toml")), ids=lambda p: p.stem)
def test_every_workload_validates_and_runs(path):
    out = run(load(path, ["duration=300"]))
    tiers = out.summary.tiers
    assert tiers and all(t.requests > 0 for t in tiers)
    assert out.summary.scenario == path.stem


def test_searcher_bursts_straddle_windows_and_get_434():
    out = run(load(WORKLOADS / "searcher.toml", ["duration=600", "tiers=['Search']"]))
    t = out.summary.tiers[0]
    assert t.outcomes["434"] > 0 and t.outcomes["-32005"] == 0
    a = out.attempts
    throttled = a[a["outcome"] == "434"]
    assert throttled["retry_after_s"].between(1, 12).all()
    # offset -0.4 s: each burst starts 0.4 s before a window boundary.
    plan = build_plan(load(WORKLOADS / "searcher.toml", ["duration=600"]))
    phase = np.mod(whole_demand(plan).t, 12.0)
    assert (phase >= 11.6 - 1e-9).mean() > 0.3 and (phase < 0.6).mean() > 0.3


def test_indexer_follows_its_daily_profile():
    plan = build_plan(load(WORKLOADS / "indexer.toml"))
    d = whole_demand(plan)
    live = d.t[d.source == 0]
    per_hour = np.bincount((live // 3600).astype(int), minlength=24)
    # rate(h) = 12 * (1 + 0.6 cos(2π(h - 15)/24)); the hour around 15:00 vs 03:00 ≈ 4x
    expected = per_hour[15] / per_hour[3]
    assert 3.0 < expected < 5.2
    assert abs(len(live) - 12 * 86400) < 5 * np.sqrt(12 * 86400)


def test_mixed_bundle_revoked_key_custom_method_and_tier():
    loaded = load(WORKLOADS / "mixed-bundle.toml", ["duration=300"])
    out = run(loaded)
    names = [t.tier for t in out.summary.tiers]
    assert "Enterprise" in names
    a = out.attempts
    revoked = a[a["source"] == "old-integration"]
    assert len(revoked) > 0 and (revoked["outcome"] == "401").all()
    assert (a.loc[a["outcome"] != "401", "source"] != "old-integration").all()
    trace_ok = a[(a["method"] == "svc_traceCall") & (a["outcome"] == "ok")]
    assert len(trace_ok) > 0 and (trace_ok["cu_settled"] == 60).all()
    call_ok = a[(a["method"] == "svc_call") & (a["outcome"] == "ok")]
    assert (call_ok["cu_settled"] == 18).all()
    assert {p.name: p.source for p in out.summary.assumptions.pricing}[
        "rpc.method_cu.svc_call"] == "scenario"
    assert set(a["region"].unique()) == {"eu-west", "us-east", "ap-south"}
    assert rc.OUTCOMES.index("401") == rc.AUTH_401


def test_streams_bot_reconnect_storm_hits_stale_slots():
    out = run(load(WORKLOADS / "streams-bot.toml", ["duration=900"]))
    by_tier = {t.tier: t for t in out.summary.tiers}
    # Streams (cap 2) and All 3 APIs (cap 3) can never hold the 4 connections wanted:
    # the clients that are out keep retrying (immediately) into 435. Professional (cap 5)
    # holds all 4; it refuses only while two unclean drops' stale slots overlap.
    h = {n: by_tier[n].websockets.handshakes["435"]
         for n in ("Streams", "All 3 APIs", "Professional bundle")}
    assert h["Streams"] > h["All 3 APIs"] > 10 * h["Professional bundle"]
    fractions = [by_tier[n].websockets.connected_fraction
                 for n in ("Streams", "All 3 APIs", "Professional bundle")]
    assert fractions == sorted(fractions) and fractions[-1] > 0.97
    s = out.streams
    assert set(s["closed_how"].unique()) >= {"unclean"}
    assert (s["close_s"] >= s["open_s"]).all()
    assert by_tier["Streams"].websockets.events_lost > 0
