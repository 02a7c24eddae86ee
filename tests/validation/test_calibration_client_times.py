"""Client-side timestamps (issue 36, item 3), on a log crafted from the independent
reference service (tests/helpers/calib_reference.py, no capsim code): the service
decides at its own times with a hidden phase; the client logs each request's send time
on a clock 1.9 s ahead of the service's, one random network delay (5-40 ms) before the
decision, the round trip it saw as the latency, rows in completion order.

The phase on the log's clock is the hidden phase plus the skew (no log of send times
can show the skew); with --client-times every reported interval must contain the truth,
the call price within 15 %, the phase interval must contain the phase on the log's
clock and its estimate lie within 0.3 s of it, the replay at the fit agree with at
least 97 % of the attempts, given the delays' bounds. (Bounded by the latencies alone,
the same log gives wider intervals, the call price only bounded above: unit tests.)
"""

from __future__ import annotations

import numpy as np
import pytest
from calib_reference import Hidden, client_log, demand, serve, to_canonical

from sim.calibration import calibrate
from sim.config.pricing import Pricing, default_pricing_table
from sim.config.tiers import find_tier

TIER = find_tier("All 3 APIs")
PHASE = 5.2
SKEW = 1.9
DELAY = (0.005, 0.040)
ON_LOG_CLOCK = (PHASE + SKEW) % 12.0


@pytest.fixture(scope="module")
def client_trace(tmp_path_factory):
    rng = np.random.default_rng(363)
    hidden = Hidden(phase_s=PHASE)
    served = serve(hidden, rng, demand(rng, duration_s=120, burst_size=(60, 320),
                                       sizing_share=0.2, ws_share=0.0),
                   record_cu=False, retry_after=True)
    log = client_log(served, rng, SKEW, DELAY)
    path = tmp_path_factory.mktemp("client") / "client.parquet"
    to_canonical(log, path)
    return hidden, log, path


def test_the_log_is_in_completion_order_not_send_order(client_trace):
    _h, log, _p = client_trace
    assert (np.diff(log["time_ns"].to_numpy()) < 0).any()


def test_client_send_times_on_a_skewed_clock(client_trace):
    h, _log, path = client_trace
    cal = calibrate(path, TIER, Pricing.model_validate(default_pricing_table()),
                    client_times=True, delay_s=DELAY)
    assert cal.verdict == "fitted", cal.notes
    assert cal.after.agreement >= 0.97
    assert any("log's clock" in n and "skew" in n for n in cal.notes)
    truth = {"rpc.method_cu.svc_call": h.call, "sizing.item_base_cu": h.base,
             "sizing.cu_per_gas": h.per_gas,
             "sizing.profile_cap_cu.fast": h.caps["fast"] * h.per_gas,
             "sizing.profile_cap_cu.deep": h.caps["deep"] * h.per_gas}
    prices = {p.name: p for p in cal.prices}
    for name, v in truth.items():
        p = prices[name]
        assert (p.low or 0.0) <= v * (1 + 1e-9), (name, p)
        assert p.high is None or v <= p.high * (1 + 1e-9), (name, p)
    call = prices["rpc.method_cu.svc_call"]
    assert abs(call.value - h.call) <= 0.15 * h.call
    iv = cal.phase_interval
    lo = iv.low % 12.0
    assert (ON_LOG_CLOCK - lo) % 12.0 <= (iv.high - iv.low) + 1e-9, (lo, iv)
    gap = abs(cal.settings_after.phase_s - ON_LOG_CLOCK) % 12.0
    assert min(gap, 12.0 - gap) <= 0.3
