"""A noisy log (issue 36): duplicated and mislabelled rows in one account's traffic on
two keys, answered by the independent reference service (tests/helpers/calib_reference.py,
no capsim code), decisions alone (no ``cu``, no Retry-After).

2 % of the rows are written twice (every field the same): each is read once and named.
A few calls carry the opposite status (a proxy's mislabelling): they are left out and
named. Then every reported interval contains the hidden price, the call price is within
15 %, the phase interval contains the hidden phase and its estimate lies within 0.3 s,
the replay at the fit agrees with at least 97 % of the attempts, the verdict is
"fitted", and the two keys, which share one budget, are not named as contradicting it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from calib_reference import Hidden, demand, mislabel, serve, to_canonical

from sim.calibration import calibrate
from sim.config.pricing import Pricing, default_pricing_table
from sim.config.tiers import find_tier

PHASE = 8.6
KEYS = ("a" * 32, "b" * 32)


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    rng = np.random.default_rng(77)
    hidden = Hidden(phase_s=PHASE)
    frame = serve(hidden, rng, demand(rng, duration_s=90, burst_size=(60, 320),
                                      sizing_share=0.2, ws_share=0.0),
                  record_cu=False, retry_after=False, keys=KEYS)
    n = len(frame)
    frame, flipped = mislabel(frame, rng, 6)
    twice = sorted(int(i) for i in rng.choice(n, n // 50, replace=False))
    log = pd.concat([frame, frame.iloc[twice]]).sort_values("time_ns", kind="stable")
    path = tmp_path_factory.mktemp("noisy") / "noisy.parquet"
    to_canonical(log.reset_index(drop=True), path)
    return hidden, path, n // 50, flipped


def test_duplicated_and_mislabelled_rows(noisy):
    h, path, n_twice, flipped = noisy
    cal = calibrate(path, find_tier("All 3 APIs"),
                    Pricing.model_validate(default_pricing_table()))
    assert cal.verdict == "fitted", cal.notes
    assert len(cal.duplicates) == n_twice
    assert not cal.conflicts
    assert cal.after.agreement >= 0.97
    truth = {"rpc.method_cu.svc_call": h.call, "sizing.item_base_cu": h.base,
             "sizing.cu_per_gas": h.per_gas,
             "sizing.profile_cap_cu.fast": h.caps["fast"] * h.per_gas,
             "sizing.profile_cap_cu.deep": h.caps["deep"] * h.per_gas}
    prices = {p.name: p for p in cal.prices}
    for name, v in truth.items():
        p = prices[name]
        assert (p.low or 0.0) <= v * (1 + 1e-9), (name, p)
        assert p.high is None or v <= p.high * (1 + 1e-9), (name, p)
    assert abs(prices["rpc.method_cu.svc_call"].value - h.call) <= 0.15 * h.call
    iv = cal.phase_interval
    assert (PHASE - iv.low % 12.0) % 12.0 <= (iv.high - iv.low) + 1e-9
    gap = abs(cal.settings_after.phase_s - PHASE) % 12.0
    assert min(gap, 12.0 - gap) <= 0.3
    # every mislabelled row is among those named as left out
    assert len(flipped) <= len(cal.dropped)
