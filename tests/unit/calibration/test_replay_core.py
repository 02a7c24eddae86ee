"""The shared replay (:mod:`sim.calibration.replay_core`): the walk (:class:`Timeline`:
settles and slot releases applied up to each attempt's time, in a fixed order at equal
times) and the one per-attempt decision (:func:`decide`) calibration and the agreement
check both ask."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sim.calibration import predict_as_recorded
from sim.calibration.replay_core import (
    FIRST,
    NOT_REPLAYED,
    RECORDED,
    Attempts,
    Close,
    Timeline,
    decide,
)
from sim.config.pricing import Pricing, default_pricing_table
from sim.config.scenario import LimiterSettings
from sim.config.tiers import find_tier
from sim.core.vocabulary import OUTCOMES, SIZE_METHOD
from sim.policy.admission import Admission
from sim.policy.limiter import OK, THROTTLED
from sim.policy.limiters import make_limiter
from sim.policy.slots import SlotPool


def test_a_settle_frees_its_refund_from_its_time_on():
    # 100 CU window; 80 reserved at t=0 settle to 10 at t=0.5: 30 more fit only from 0.5.
    lim = make_limiter(100.0, LimiterSettings())
    tl = Timeline(lim)
    times = [0.0, 0.4, 0.5]
    got = []
    for i, now in tl.walk(range(3), times):
        if i == 0:
            res = lim.reserve(now, 80.0, 10.0)
            tl.settle_at(now + 0.5, res, 80.0, 10.0)
            got.append(int(res))
        else:
            got.append(int(lim.reserve(now, 30.0, 30.0)))
    assert got == [OK, THROTTLED, OK]
    assert math.isclose(lim.available(0.5), 100.0 - 10.0 - 30.0)


def test_a_slot_is_held_until_its_release_and_forever_without_one():
    tl = Timeline(None, SlotPool(1))
    slots = tl.slots
    assert slots.acquire(0.0)[0]
    tl.release_slot_at(2.0)
    tl.advance(1.9)
    assert not slots.acquire(1.9)[0]
    tl.advance(2.0)
    assert slots.acquire(2.0)[0]
    tl.release_slot_at(math.nan)  # no recorded end: held
    tl.advance(1e9)
    assert not slots.acquire(1e9)[0]


def test_equal_times_run_first_then_recorded_then_in_scheduling_order():
    tl = Timeline(None)
    seen = []
    tl.at(1.0, RECORDED, lambda t, x: seen.append(x), "recorded-a")
    tl.at(1.0, FIRST, lambda t, x: seen.append(x), "first-a")
    tl.at(1.0, RECORDED, lambda t, x: seen.append(x), "recorded-b")
    tl.at(0.5, RECORDED, lambda t, x: seen.append(x), "earlier")
    tl.at(1.0, FIRST, lambda t, x: seen.append(x), "first-b")
    tl.at(1.5, FIRST, lambda t, x: seen.append(x), "later")
    assert [i for i, _ in tl.walk([0], [1.0])] == [0]
    assert seen == ["earlier", "first-a", "first-b", "recorded-a", "recorded-b"]


def _pricing() -> Pricing:
    return Pricing.model_validate(default_pricing_table())


# -- the one per-attempt decision (``decide``), as calibration and the agreement check ask it

T0_NS = 1_700_000_000 * 10**9


def _trace(rows) -> pd.DataFrame:
    """A canonical trace frame of ``(t_s, method, api, status, latency_ms[, profiles])``."""
    return pd.DataFrame({
        "time_ns": [T0_NS + int(r[0] * 1e9) for r in rows],
        "method": [r[1] for r in rows], "api": [r[2] for r in rows],
        "status": [r[3] for r in rows], "latency_ms": [r[4] for r in rows],
        "profiles": [r[5] if len(r) > 5 else None for r in rows]})


def test_calibration_refuses_an_api_the_tier_lacks_before_the_window():
    """Old behaviour (calibration asked the limiter alone): the sizing request on a tier
    without the Search API was predicted ok and reserved 10 + 100 CU, so only 244 of the
    250 calls of 20 CU fitted the 5,000 CU window. The service refuses it 402 first."""
    tier = find_tier("Streams + RPC")  # 5,000 CU per 12 s; rpc and streams only
    rows = [(0.0, SIZE_METHOD, "search", 200, 50.0, "deep")]
    rows += [(0.1 + k * 0.01, "svc_call", "rpc", 200, 5.0) for k in range(250)]
    pred = predict_as_recorded(_trace(rows), tier, _pricing(), LimiterSettings())
    assert pred.predicted[0] == "402"
    assert list(pred.predicted[1:]) == ["ok"] * 250  # 250 x 20 = 5,000 CU: all fit


def test_calibration_reads_a_connect_cost_above_the_window_as_a_cu_refusal():
    """Old behaviour: calibration classed a connect cost above the window (the limiter's
    OVERSIZED) as ``other``; the service answers ws_cu_rejected, class ``throttled``."""
    table = default_pricing_table()
    table["websocket"]["connect_cu"] = 4_000.0  # the Streams tier has 3,000 CU a window
    pricing = Pricing.model_validate(table)
    pred = predict_as_recorded(_trace([(0.0, "pending-txs", "streams", 434, 10.0)]),
                               find_tier("Streams"), pricing, LimiterSettings())
    assert list(pred.predicted) == ["throttled"]


def _handshakes(times, slot_end_s, *, conn=None, events=()):
    n = len(times)
    return Attempts(np.array(times), np.array(["pending-txs"] * n, dtype=object),
                    np.array(["streams"] * n, dtype=object), np.zeros(n), np.zeros(n),
                    np.full(n, math.nan), slot_end_s=np.array(slot_end_s),
                    conn=None if conn is None else np.array(conn), events=events)


def test_a_handshakes_slot_goes_back_at_its_end_or_at_its_recorded_close():
    # Streams: 2 slots; connect 50 CU of 3,000. Row 0 ends at 5 s (calibration: recorded
    # time + latency); row 1 has no end of its own, its connection 7 closes at 3 s (the
    # agreement check's sidecar). Row 2 (t=2) finds both slots held: 435; row 3 (t=3)
    # takes the slot the close freed; row 4 (t=4.9) finds both held again, row 5 (t=5)
    # the one row 0 gave back.
    adm = Admission.for_tier(find_tier("Streams"), _pricing(), LimiterSettings())
    att = _handshakes([0.0, 0.5, 2.0, 3.0, 4.9, 5.0],
                      [5.0, math.nan, math.nan, math.nan, math.nan, math.nan],
                      conn=[1, 7, 2, 3, 4, 5], events=[Close(3.0, 7, True)])
    got = [OUTCOMES[o] for o in decide(adm, att)]
    assert got == ["ok", "ok", "435", "ok", "435", "ok"]


def test_an_unclean_close_leaves_the_slot_stale_and_rows_left_out_are_not_asked():
    adm = Admission.for_tier(find_tier("Streams"), _pricing(), LimiterSettings())
    att = _handshakes([0.0, 0.5, 1.0, 1.5, 20.0], [math.nan] * 5, conn=[1, 2, 3, 4, 5],
                      events=[Close(0.8, 1, False)])
    att = Attempts(**{**att.__dict__, "stale_expiry_s": 10.0,
                      "replayed": np.array([True, True, True, False, True])})
    out = decide(adm, att)
    # the slot of connection 1 is stale from 0.8 to 10.8: row 2 is refused; row 3 is not
    # replayed; row 4 (t=20) finds the stale slot expired
    assert [OUTCOMES[o] if o != NOT_REPLAYED else None for o in out] == [
        "ok", "ok", "435", None, "ok"]


def test_admission_built_from_parts_spends_the_trial_connect_cost():
    """Calibration builds the account per fit with no scenario: the connect cost given is
    the one spent (two connects of 2,500 CU fill the 5,000 CU window of Streams + RPC;
    its third slot is free, so the third handshake is refused for CU, not 435)."""
    adm = Admission.for_tier(find_tier("Streams + RPC"), _pricing(), LimiterSettings(),
                             connect_cu=2_500.0)
    assert adm.handshake(0.0, "pending-txs", key_ok=True).name == "ok"
    assert adm.handshake(0.1, "new-blocks", key_ok=True).name == "ok"
    assert adm.limiter.available(0.2) == 0.0
    assert adm.handshake(0.2, "new-blocks", key_ok=True).name == "ws_cu_rejected"
    assert adm.request(0.2, "svc_call", key_ok=True, h2_sni=True, reserve_cu=20.0,
                       actual_cu=20.0, api="rpc").name == "-32005"
