"""The refund rule from decisions alone (issue 36, item 1), on crafted traffic answered by
the independent reference service (tests/helpers/calib_reference.py, no capsim code).

The traffic is laid out so that the two rules predict different decisions, no
Retry-After recorded, no ``cu``. A cycle of four windows:

* A: only ``svc_call`` (400 in 2 s): 365 admitted, the rest throttled; pins the call
  price (23 CU against 8400).
* B: five sizing requests (4 ``deep`` items, ``gas_used`` 0) held 5 s, 400 calls
  while they are held (289 admitted: their reservations, 4 x (7 + 80) each, are
  counted), then 150 calls after they settled at 4 x 7 in the same window (69
  admitted: their refunds, 320 CU each, made room under both rules). B pins the
  reservation and the refund.
* C: 285 calls (6555 CU), then the same five sizing requests (1740 CU) 0.5 s before
  the window ends, settling 0.1 s after it, in D. C has 105 CU left: D's ten early
  calls (230 CU), admitted, cannot have been in C, so no phase puts the settlement
  back in C (without these calls, ``origin-window`` fits with the window start moved
  after the settlement).
* D: ten calls right at its start (before the settlement), then 500: under
  ``origin-window`` the refunds are lost (C is over) and D admits 365 calls; under
  ``current-window`` they land in D, clip its counter at zero, and D admits 375.

With the call price pinned by A and the refund's size by B, only the true rule fits D:
calibration must name it (not "both fit"), and the hidden phase must lie in the reported
interval. A trace with no refund crossing a window start cannot tell the rules apart:
there "both fit" is the honest answer.
"""

from __future__ import annotations

import numpy as np
import pytest
from calib_reference import Hidden, serve, to_canonical

from sim.calibration import calibrate
from sim.config.pricing import Pricing, default_pricing_table
from sim.config.tiers import find_tier

TIER = find_tier("All 3 APIs")
PHASE = 5.0
# window starts in trace seconds: the reference's T0 is 0.123 s after a multiple of 12 s
START = PHASE - 0.123


def _calls(t0: float, n: int, span: float) -> list[tuple]:
    return [(t0 + span * i / n, "call", 0, (), 0, 0.05) for i in range(n)]


def _sizing(t0: float, latency: float) -> list[tuple]:
    return [(t0 + 0.01 * i, "size", 4, ("deep",) * 4, 0, latency) for i in range(5)]


def crafted_demand(cycles: int = 5, crossing: bool = True) -> list[tuple]:
    """First attempts of ``cycles`` A-B-C-D cycles (module doc); without ``crossing``
    C's sizing requests settle inside C."""
    out: list[tuple] = []
    for k in range(cycles):
        w = START + 12.0 * (4 * k + 1)
        out += _calls(w + 1.0, 400, 2.0)                       # A
        b = w + 12.0
        out += _sizing(b + 0.5, 5.0) + _calls(b + 1.0, 400, 2.0)  # B
        out += _calls(b + 6.0, 150, 1.0)
        c = w + 24.0
        out += _calls(c + 9.0, 285, 1.0)
        if crossing:
            out += _sizing(c + 11.5, 0.6)                      # C, settles in D
        else:
            out += _sizing(c + 10.5, 0.6)                      # C, settles in C
        d = w + 36.0
        out += _calls(d + 0.01, 10, 0.05) + _calls(d + 1.0, 500, 2.0)  # D
    return sorted(out, key=lambda r: r[0])


def _calibrate(tmp_path, rule: str, crossing: bool = True):
    hidden = Hidden(phase_s=PHASE, refund_to=rule)
    frame = serve(hidden, np.random.default_rng(1), crafted_demand(crossing=crossing),
                  record_cu=False, retry_after=False)
    path = tmp_path / "t.parquet"
    to_canonical(frame, path)
    pricing = Pricing.model_validate(default_pricing_table())
    return hidden, frame, calibrate(path, TIER, pricing)


@pytest.mark.parametrize("rule", ["origin-window", "current-window"])
def test_the_refund_rule_is_named_from_decisions_alone(tmp_path, rule):
    hidden, frame, cal = _calibrate(tmp_path, rule)
    assert "retry_after_s" not in frame.columns and "cu" not in frame.columns
    assert cal.refund_rule == rule
    assert cal.settings_after.refund_to == rule
    iv = cal.phase_interval
    assert (hidden.phase_s - iv.low) % 12.0 <= (iv.high - iv.low) + 1e-9
    assert cal.after.agreement == 1.0
    call = {p.name: p for p in cal.prices}["rpc.method_cu.svc_call"]
    assert call.low <= hidden.call <= call.high


def test_the_crafted_trace_separates_the_rules():
    """The premise, from the reference alone: D admits 365 calls under origin-window
    (8400 // 23) and 375 under current-window (its ten early calls refunded away)."""
    got = {}
    for rule in ("origin-window", "current-window"):
        frame = serve(Hidden(phase_s=PHASE, refund_to=rule), np.random.default_rng(1),
                      crafted_demand(cycles=1), record_cu=False, retry_after=False)
        t0 = 0.0
        t = (frame["time_ns"].to_numpy() - frame["time_ns"].to_numpy()[0]) / 1e9 + t0
        # the first row is A's first call at START + 13 s
        d = 36.0 - 1.0
        in_d = (t >= d) & (t < d + 12.0) & (frame["method"] == "svc_call").to_numpy()
        got[rule] = int((in_d & (frame["status"] == 200).to_numpy()).sum())
    assert got == {"origin-window": 8400 // 23, "current-window": 8400 // 23 + 10}


def test_without_a_refund_across_a_window_start_both_rules_fit(tmp_path):
    _hidden, _frame, cal = _calibrate(tmp_path, "current-window", crossing=False)
    assert cal.refund_rule == "both fit"
    assert cal.after.agreement == 1.0
