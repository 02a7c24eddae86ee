"""The trace comparison counts a connection against the account from its first request
that passes the header checks, as the emulator does (spec 8.4: limits are per account;
a connection that never presents a valid key belongs to none)."""

from __future__ import annotations

import math

from live_server import BASE

from sim.calibration.agreement import compare
from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.live.record import DriveRecorder, sidecar_path


def _attempt(rec, i, t, key, status, outcome, *, conn, http2=True, host="rpc.localhost"):
    rec.attempt(t_s=t, end_s=t + 0.001, api="rpc", method="svc_pendingBlock", key=key,
                region=None, status=status, kind="http", t_server_s=t, source="a", rid=i,
                attempt=0, conn=conn, conn_new=True, hostname=host, http2=http2,
                reserve_cu=0.0, outcome=outcome, retry_after_s=math.nan, t_wire_s=t)


def test_keyless_and_http1_connections_do_not_count(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(BASE, encoding="utf-8")
    loaded = load(path)
    tier = find_tier("All 3 APIs", loaded.tiers)
    rec = DriveRecorder(int(loaded.scenario.start.timestamp() * 1e9))
    i = 0
    # Within one second: 40 connections with a wrong key, 10 over HTTP/1.1 (421) ...
    for k in range(40):
        _attempt(rec, i, 0.1 + k * 0.005, "wrong", 401, "401", conn=i)
        i += 1
    for k in range(10):
        _attempt(rec, i, 0.4 + k * 0.005, "k1", 421, "421", conn=i, http2=False)
        i += 1
    # ... then 33 real connections: the 33rd is the 33rd new one in that second.
    for k in range(33):
        _attempt(rec, i, 0.5 + k * 0.005, "k1", 430 if k == 32 else 200,
                 "430" if k == 32 else "ok", conn=i)
        i += 1
    out = tmp_path / "driven.parquet"
    rec.write(out, "test")
    result = compare(loaded, tier, out, sidecar=sidecar_path(out))
    assert result.compared == 83
    assert result.agreed == 83, result.mismatches[:3]
