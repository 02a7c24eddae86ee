"""Client-side pacing: the token bucket, alone and in the model."""

from __future__ import annotations

import numpy as np
import pytest

from sim.config.resolved import validate
from sim.config.tiers import find_tier
from sim.model import recorder as rc
from sim.model.engine import TierRun
from sim.policy.pacing import TokenBucket
from sim.workload.demand import build_plan


def test_bucket_waits_exactly_for_the_deficit():
    b = TokenBucket(rate_cu_per_s=10, burst_cu=20)
    assert b.delay(0.0, 20) == 0.0          # the full burst
    assert b.delay(0.0, 10) == pytest.approx(1.0)   # 10 CU short at 10 CU/s
    assert b.delay(0.0, 10) == pytest.approx(2.0)   # queued behind the first debt
    assert b.delay(5.0, 10) == pytest.approx(0.0)   # 5 s later: 50 - 20 debt = 30 -> 20 cap


def test_pacing_keeps_a_client_under_its_rate_and_the_window():
    # svc_call costs 20 CU; offered 10/s = 200 CU/s against a pacer of 150 CU/s with a
    # 100 CU burst; round trip and service time 0, so a request is admitted (and
    # answered) the moment the pacer lets it go. Request n (1-based, offered at
    # t_n = (n-1)/10) leaves at max(t_n, (20 n - 100) / 150), computed here directly.
    raw = {
        "name": "paced", "duration": 120, "tiers": ["RPC"], "account": {"keys": ["k"]},
        "regions": [{"name": "r", "rtt_ms": 0}],
        "clients": {"default": {"retry": {"policy": "none"},
                                "pacing": {"rate_cu_per_s": 150, "burst_cu": 100}}},
        "methods": {"svc_call": {"service_time": {"dist": "constant", "value": 0.0}}},
        "sources": [{"name": "s", "key": "k", "arrival": {"process": "constant", "rate": 10}}],
    }
    res = TierRun(build_plan(validate(raw, "t")), find_tier("RPC")).run()
    a = res.attempts
    assert len(a["outcome"]) == 1200 and (a["outcome"] == rc.OK).all()
    n = np.arange(1, 1201)
    leave = np.maximum((n - 1) / 10.0, (20.0 * n - 100.0) / 150.0)
    np.testing.assert_allclose(np.sort(a["t_end"]), leave, atol=1e-9)
    # Unpaced, the same traffic fills 2,400 CU per window; paced it stays near 1,800.
    assert max(res.windows.peak_used_cu) <= 150 * 12 + 100 + 20
