"""Websocket slots, handshakes, publishing and reconnects (sim/model/websockets/__init__.py).

Timeline tests follow the spec (5, 6.2, 7, 8.2.3, 8.3) with the expected handshakes,
sessions and counts worked out by hand in each test. Unless a test says otherwise: the
"Streams" tier (budget 3,000 CU per 12 s, cap 2), the shipped pricing (connect 50 CU;
new-blocks 5 CU per event), ``stale_expiry_s`` 30 and ``retry_after_live_s`` 30. The
new-blocks stream publishes at slot_s, 2 slot_s, ... so blocks are deterministic.
The last part holds :class:`SlotPool` against a reference model with Hypothesis.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sim.config.pricing import Pricing, default_pricing_table
from sim.config.tiers import CATALOG, SEARCH, STREAMS, Tier
from sim.config.websockets import StreamClient, WebsocketSettings
from sim.model import recorder as rc
from sim.model.websockets import CLOSE_KINDS, SlotPool, Websockets
from sim.policy.limiter import CULimiter

PRICING = Pricing.model_validate(default_pricing_table())
TIERS = {t.name: t for t in CATALOG}
STREAMS_TIER = TIERS["Streams"]
ONE_SLOT = Tier("One slot", frozenset({STREAMS}), 3_000, 1, custom=True)


def run(clients, tier=STREAMS_TIER, *, duration=60.0, ws=None, budget=None, keys=("k",),
        seed=1, at=(), limiter=None, day_offset_s=0.0):
    """Run the websocket model alone; ``at`` = [(time, fn(limiter, now))] side effects."""
    env = simpy.Environment()
    lim = limiter or CULimiter(budget or tier.cu_per_window)
    model = Websockets(env, lim, tier, [StreamClient.model_validate(c) for c in clients],
                       WebsocketSettings.model_validate(ws or {}), PRICING,
                       lambda key: key in keys, seed, duration, day_offset_s=day_offset_s)
    for t, fn in at:
        if t == 0:  # before any process runs
            fn(lim, 0.0)
        else:
            env.timeout(t).callbacks.append(lambda _e, fn=fn: fn(lim, env.now))
    model.start()
    env.run()
    return model.result()


def client(**kw):
    base = {"name": "c", "key": "k", "stream": "new-blocks"}
    base.update(kw)
    return base


def log_rows(r, conn=None):
    """Handshakes as (t, conn, outcome name, retry-after or None)."""
    log = r["handshake_log"]
    rows = []
    for t, c, o, ra in zip(log["t"], log["conn"], log["outcome"], log["retry_after_s"],
                           strict=True):
        if conn is None or c == conn:
            rows.append((float(t), int(c), rc.OUTCOMES[o], None if math.isnan(ra) else ra))
    return rows


def session_rows(r):
    s = r["sessions"]
    return sorted(
        (int(c), float(o), float(cl), CLOSE_KINDS[k], int(d), int(dr), int(lb))
        for c, o, cl, k, d, dr, lb in zip(
            s["conn"], s["open_s"], s["close_s"], s["close_kind"], s["events_delivered"],
            s["events_dropped"], s["events_lost_before"], strict=True))


def slot_rows(r):
    s = r["slots"]
    return list(zip(s["t"].tolist(), s["live"].tolist(), s["stale"].tolist(), strict=True))


FIXED_1S = {"policy": "fixed", "delay_s": 1}


# -- the reconnect storm after an unclean drop (spec 8.3, 7) ---------------------------------

def test_unclean_drop_gets_435_until_stale_slots_expire():
    r = run([client(connections=2, reconnect=FIXED_1S, faults={"drop_all_at_s": [10]})])
    expected = [(0.0, 0, "ok", None), (0.0, 1, "ok", None)]
    for t in range(11, 40):  # stale until 10 + 30 = 40; Retry-After = 40 - t
        expected += [(float(t), 0, "435", 40.0 - t), (float(t), 1, "435", 40.0 - t)]
    expected += [(40.0, 0, "ok", None), (40.0, 1, "ok", None)]
    assert log_rows(r) == expected
    assert r["handshakes"] == {"ok": 4, "435": 58, "ws_cu_rejected": 0, "401": 0, "402": 0}
    # Blocks at 12, 24, 36 are lost to both connections; 48 reaches both.
    assert session_rows(r) == [(0, 0.0, 10.0, "unclean", 0, 0, 0), (0, 40.0, 60.0, "end", 1, 0, 3),
                               (1, 0.0, 10.0, "unclean", 0, 0, 0), (1, 40.0, 60.0, "end", 1, 0, 3)]
    assert slot_rows(r) == [(0.0, 2, 0), (10.0, 0, 2), (40.0, 2, 0)]
    assert r["events_published"] == {"new-blocks": 4}
    assert (r["events_delivered"], r["events_lost"]) == (2, 6)
    assert r["wanted_s"] == 120.0 and r["connected_s"] == 2 * (10 + 20)
    assert r["connected_fraction"] == pytest.approx(0.5)
    assert r["cu_connect"] == 4 * 50 and r["cu_publish"] == 2 * 5


def test_stale_expiry_range_is_drawn_per_disconnect():
    r = run([client(connections=2, reconnect=FIXED_1S, faults={"drop_all_at_s": [10]})],
            ws={"stale_expiry_s": {"low": 20, "high": 25}})
    expiries = [t for t, live, stale in slot_rows(r) if t > 10]
    assert len(expiries) >= 1 and all(30.0 <= t <= 35.0 for t in expiries)
    oks = [t for t, _, o, _ in log_rows(r) if o == "ok" and t > 0]
    refusals = [(t, ra) for t, _, o, ra in log_rows(r) if o == "435"]
    first = min(e for e in r["slots"]["t"] if e > 10)
    # Each connection gets in at the first whole second at or after an expiry.
    assert min(oks) == math.ceil(first)
    assert all(ra == math.ceil(first - t) for t, ra in refusals if t < first)


def test_clean_close_frees_the_slot_at_once():
    r = run([client(connections=2, reconnect={"policy": "immediate"},
                    faults={"drop_all_at_s": [10], "clean_close_fraction": 1.0})])
    assert log_rows(r) == [(0.0, 0, "ok", None), (0.0, 1, "ok", None),
                           (10.0, 0, "ok", None), (10.0, 1, "ok", None)]
    assert [k for *_, k, _d, _dr, _lb in session_rows(r)] == ["clean", "end", "clean", "end"]
    assert r["connected_s"] == r["wanted_s"] == 120.0


def test_immediate_reconnect_storm_hammers_until_expiry():
    r = run([client(reconnect={"policy": "immediate"}, faults={"drop_all_at_s": [10]})],
            ONE_SLOT, ws={"min_retry_s": 0.5})
    rows = log_rows(r)
    assert rows[1] == (10.0, 0, "435", 30.0)  # the first retry comes at once
    storm = [t for t, _, o, _ in rows if o == "435"]
    assert np.allclose(np.diff(storm), 0.5)  # then every min_retry_s
    assert len(storm) == 60  # 10.0, 10.5, ..., 39.5
    assert rows[-1] == (40.0, 0, "ok", None)


def test_cap_zero_always_refuses_with_435():
    monitoring = client(stream="monitoring", reconnect={"policy": "retry-after", "jitter_s": 0})
    for tier in (TIERS["Search"], Tier("No slots", frozenset({STREAMS, SEARCH}), 3_000, 0)):
        r = run([monitoring], tier, duration=100.0)
        assert log_rows(r) == [(float(t), 0, "435", 30.0) for t in (0, 30, 60, 90)]
        assert r["cu_connect"] == 0 and r["connected_s"] == 0 and r["wanted_s"] == 100.0
        assert r["events_lost"] == r["events_published"]["monitoring"] > 0


def test_all_slots_live_uses_retry_after_live():
    r = run([client(connections=3, reconnect={"policy": "retry-after", "jitter_s": 0})],
            duration=100.0, ws={"retry_after_live_s": 45})
    assert log_rows(r, conn=2) == [(0.0, 2, "435", 45.0), (45.0, 2, "435", 45.0),
                                   (90.0, 2, "435", 45.0)]


def test_streams_and_monitoring_share_the_cap():
    tier = TIERS["Streams + Search"]  # cap 3
    r = run([client(connections=2), client(name="m", stream="monitoring", connections=2,
                                           reconnect={"policy": "retry-after", "jitter_s": 0})],
            tier, duration=20.0)
    assert r["handshakes"]["ok"] == 3 and r["handshakes"]["435"] == 1
    log = r["handshake_log"]
    assert log["client"][log["outcome"] == rc.WS_435].tolist() == [1]


# -- the CU window at the handshake (spec 7, 8.2.3) ----------------------------------------

def fill_window(limiter, now):
    assert limiter.reserve(now, limiter.available(now)) == 0


def test_exhausted_window_rejects_handshakes_and_returns_the_slot():
    r = run([client(connections=2, reconnect={"policy": "retry-after", "jitter_s": 0})],
            duration=30.0, at=[(0.0, fill_window)])
    # Both are rejected (the second would get 435 if the first kept its slot) and come
    # back when the next window opens at 12.
    assert log_rows(r) == [(0.0, 0, "ws_cu_rejected", 12.0), (0.0, 1, "ws_cu_rejected", 12.0),
                           (12.0, 0, "ok", None), (12.0, 1, "ok", None)]
    assert slot_rows(r) == [(0.0, 0, 0), (12.0, 2, 0)]
    assert r["cu_connect"] == 100.0


def test_ws_cu_rejected_retry_after_points_at_the_next_window():
    # Open-loop sessions arriving at 3 and 7 (constant rate 0.25/s, phase 0.75).
    arrivals = client(arrival={"process": "constant", "rate": 0.25, "phase": 0.75},
                      session={"dist": "constant", "value": 1.0})
    r = run([arrivals], duration=10.0, at=[(0.0, fill_window)])
    assert log_rows(r) == [(3.0, 0, "ws_cu_rejected", 9.0), (7.0, 1, "ws_cu_rejected", 5.0)]


def test_no_daily_allowance_is_402():
    r = run([client(reconnect={"max_attempts": 1})], duration=30.0,
            limiter=CULimiter(3_000, daily_allowance_cu=40))  # connect costs 50
    assert log_rows(r) == [(0.0, 0, "402", None)]
    assert slot_rows(r) == [(0.0, 0, 0)]


# -- billed publishes in an exhausted window (spec 6.2) --------------------------------------

BLOCKS_5S = {"new_blocks_slot_s": 5}  # blocks at 5, 10, 15, 20, 25 in a 30-s run
FILL_AT_13 = [(13.0, fill_window)]  # window [12, 24) exhausted from 13


def test_billed_stream_closes_when_a_publish_cannot_reserve():
    r = run([client(reconnect=FIXED_1S)], duration=30.0, ws=BLOCKS_5S, at=FILL_AT_13)
    # The block at 15 cannot reserve: error and clean close at 15; reconnects are
    # rejected by the window until it turns at 24; the block at 20 is lost while down.
    expected = [(0.0, 0, "ok", None)]
    expected += [(float(t), 0, "ws_cu_rejected", 24.0 - t) for t in range(16, 24)]
    expected += [(24.0, 0, "ok", None)]
    assert log_rows(r) == expected
    assert session_rows(r) == [(0, 0.0, 15.0, "exhausted", 2, 1, 0),
                               (0, 24.0, 30.0, "end", 1, 0, 1)]
    assert slot_rows(r) == [(0.0, 1, 0), (15.0, 0, 0), (24.0, 1, 0)]  # freed at once
    assert (r["events_delivered"], r["events_lost"]) == (3, 2)
    assert r["cu_publish"] == 3 * 5 and r["cu_connect"] == 2 * 50


def test_billed_stream_drops_events_and_stays_open():
    r = run([client(reconnect=FIXED_1S)], duration=30.0, ws={**BLOCKS_5S, "on_exhausted": "drop"},
            at=FILL_AT_13)
    assert log_rows(r) == [(0.0, 0, "ok", None)]
    assert session_rows(r) == [(0, 0.0, 30.0, "end", 3, 2, 0)]  # 15 and 20 dropped
    assert (r["events_delivered"], r["events_lost"]) == (3, 2)
    assert r["cu_publish"] == 15.0 and r["connected_fraction"] == 1.0


def test_publishes_spend_in_the_shared_window():
    lim = CULimiter(3_000)
    run([client(connections=2)], duration=30.0, ws=BLOCKS_5S, limiter=lim)
    reserved = lim.window_stats().reserved_cu
    # Window 0: 2 connects + blocks at 5 and 10 to two connections; window 1: 15, 20;
    # window 2: 25.
    assert reserved == [2 * 50 + 2 * 2 * 5, 2 * 2 * 5, 2 * 5]


def test_unbilled_monitoring_spends_nothing():
    r = run([client(stream="monitoring")], TIERS["All 3 APIs"], duration=600.0)
    assert r["cu_publish"] == 0.0
    assert r["events_delivered"] == r["events_published"]["monitoring"] > 0


# -- key and selection (spec 5, 7) -----------------------------------------------------------

def test_unknown_key_gets_401_and_gives_up():
    r = run([client(key="stolen", reconnect={**FIXED_1S, "max_attempts": 3})])
    assert log_rows(r) == [(float(t), 0, "401", None) for t in (0, 1, 2)]
    assert r["clients"]["gave_up"].tolist() == [1]
    assert slot_rows(r) == [(0.0, 0, 0)]
    # Still wanted for the whole run: every block is lost to it.
    assert r["wanted_s"] == 60.0 and r["connected_s"] == 0.0
    assert r["events_lost"] == r["events_published"]["new-blocks"] == 4


def test_key_is_checked_before_the_selection_and_the_selection_before_the_cap():
    once = {"max_attempts": 1}
    assert log_rows(run([client(key="x", reconnect=once)], TIERS["RPC"]))[0][2] == "401"
    # RPC has no streams (and cap 0): 402, not 435.
    assert log_rows(run([client(reconnect=once)], TIERS["RPC"]))[0][2] == "402"
    # The monitoring websocket needs the Search API.
    assert log_rows(run([client(stream="monitoring", reconnect=once)]))[0][2] == "402"


# -- sessions, losses, policies --------------------------------------------------------------

def test_sessions_and_gaps_count_only_wanted_time():
    nine_five = {"session": {"dist": "constant", "value": 9},
                 "gap": {"dist": "constant", "value": 5}}
    r = run([client(**nine_five)], ws=BLOCKS_5S)
    # Sessions [0,9], [14,23], [28,37], [42,51], [56,60); blocks every 5 s; blocks in the
    # gaps (10, 25, 40, 55) are not lost: nobody wanted them.
    assert session_rows(r) == [(0, 0.0, 9.0, "clean", 1, 0, 0), (0, 14.0, 23.0, "clean", 2, 0, 0),
                               (0, 28.0, 37.0, "clean", 2, 0, 0),
                               (0, 42.0, 51.0, "clean", 2, 0, 0), (0, 56.0, 60.0, "end", 0, 0, 0)]
    assert r["wanted_s"] == r["connected_s"] == 40.0
    assert (r["events_delivered"], r["events_lost"]) == (7, 0)


def test_session_clock_runs_through_a_drop():
    # A 30-s session dropped uncleanly at 10 reconnects at 40 (stale expiry), after its
    # planned end at 30: it ends at 30 while down, then the next one starts after the gap.
    r = run([client(session={"dist": "constant", "value": 30}, gap={"dist": "constant", "value": 2},
                    reconnect=FIXED_1S, faults={"drop_all_at_s": [10]})],
            ONE_SLOT, duration=45.0, ws={"stale_expiry_s": 25})
    # Retries at 11..29 get 435 (stale until 35); the session ends at 30, the next starts
    # at 32: 435 until 35, then ok.
    oks = [t for t, _, o, _ in log_rows(r) if o == "ok"]
    assert oks == [0.0, 35.0]
    assert r["wanted_s"] == 30.0 + (45.0 - 32.0)
    assert r["connected_s"] == 10.0 + 10.0


def test_faults_drop_at_the_configured_rate():
    mean = 100.0
    r = run([client(stream="monitoring", reconnect={"policy": "immediate"},
                    faults={"mean_time_between_drops_s": mean})],
            TIERS["Professional bundle"], duration=20_000.0)
    drops = int((r["sessions"]["close_kind"] == CLOSE_KINDS.index("unclean")).sum())
    expected = r["connected_s"] / mean  # Poisson drops per connected second
    assert abs(drops - expected) <= 4 * math.sqrt(expected)
    # Immediate reconnects into the 4 free slots: almost always connected.
    assert r["connected_fraction"] > 0.999
    s = r["slots"]
    assert (s["live"] + s["stale"] <= 5).all()


def test_exponential_backoff_delays_are_full_jitter_within_the_cap():
    policy = {"policy": "exponential", "base_s": 1, "cap_s": 8}
    r = run([client(reconnect=policy)], TIERS["RPC"], duration=4_000.0, ws={"min_retry_s": 0.1})
    t = r["handshake_log"]["t"]
    gaps = np.diff(t)
    bounds = np.minimum(8.0, 2.0 ** np.arange(1, gaps.size + 1))  # before attempt n+1
    assert (gaps >= 0.1 - 1e-9).all() and (gaps <= np.maximum(bounds, 0.1) + 1e-9).all()
    late = gaps[10:]  # U[0, 8] floored at 0.1: mean ~ 4.0006, sd 8 / sqrt(12)
    assert abs(late.mean() - 4.0) < 4 * (8 / math.sqrt(12)) / math.sqrt(late.size)


def test_retry_after_policy_adds_jitter_to_the_header():
    r = run([client(connections=3, reconnect={"policy": "retry-after", "jitter_s": 2})],
            duration=3_000.0)
    t = r["handshake_log"]["t"][r["handshake_log"]["conn"] == 2]
    gaps = np.diff(t)
    assert (gaps >= 30.0).all() and (gaps < 32.0).all()
    assert abs(gaps.mean() - 31.0) < 4 * (2 / math.sqrt(12)) / math.sqrt(gaps.size)


def test_daily_profile_modulates_pending_rates():
    weights = [1.0, 3.0] + [2.0] * 22  # mean 2: hour 0 runs at half the rate, hour 1 at 1.5x
    ws = {"pending_txs_rate": 2.0, "daily_profile": weights}
    for offset, expected in ((0.0, 3_600.0), (3_600.0, 10_800.0)):
        r = run([client(key="x", stream="pending-txs", reconnect={"max_attempts": 1})],
                duration=3_600.0, ws=ws, day_offset_s=offset)
        assert abs(r["events_published"]["pending-txs"] - expected) <= 4 * math.sqrt(expected)


def test_new_blocks_miss_probability():
    r = run([client(key="x", reconnect={"max_attempts": 1})], duration=12.0 * 4001,
            ws={"new_blocks_miss_probability": 0.25})
    n, p = 4000, 0.75
    assert abs(r["events_published"]["new-blocks"] - n * p) <= 4 * math.sqrt(n * p * (1 - p))


def test_same_seed_same_result_and_common_publications_across_tiers():
    clients = [client(connections=3, faults={"mean_time_between_drops_s": 50}),
               client(name="p", stream="pending-txs", reconnect={"policy": "exponential"})]
    a = run(clients, duration=600.0, seed=7)
    b = run(clients, duration=600.0, seed=7)
    for key in ("sessions", "handshake_log", "slots"):
        for col in a[key]:
            assert np.array_equal(a[key][col], b[key][col], equal_nan=True)
    c = run(clients, TIERS["Advanced bundle"], duration=600.0, seed=7)
    assert c["events_published"] == a["events_published"]


# -- configuration -----------------------------------------------------------------------------

def test_config_rejects_inconsistent_clients():
    open_loop = {"process": "poisson", "rate": 1.0}
    with pytest.raises(ValidationError, match="session"):
        StreamClient.model_validate(client(arrival=open_loop))
    with pytest.raises(ValidationError, match="connections = 1"):
        StreamClient.model_validate(client(arrival=open_loop, connections=2,
                                           session={"dist": "constant", "value": 1}))
    with pytest.raises(ValidationError, match="reconnect"):
        StreamClient.model_validate(client(arrival=open_loop, reconnect=FIXED_1S,
                                           session={"dist": "constant", "value": 1}))
    with pytest.raises(ValidationError):
        StreamClient.model_validate(client(stream="mempool"))
    with pytest.raises(ValidationError):
        WebsocketSettings.model_validate({"stale_expiry": 30})
    with pytest.raises(ValidationError):
        WebsocketSettings.model_validate({"daily_profile": [1.0] * 23})
    with pytest.raises(ValidationError):
        WebsocketSettings.model_validate({"stale_expiry_s": {"low": 40, "high": 20}})
    with pytest.raises(ValidationError, match="both always 0"):
        StreamClient.model_validate(client(session={"dist": "constant", "value": 0}))
    with pytest.raises(ValueError, match="unique"):
        run([client(), client()])


# -- SlotPool ------------------------------------------------------------------------------------

def test_slot_pool_timeline():
    pool = SlotPool(2, retry_after_live_s=30)
    assert pool.acquire(0.0) == (True, 0)
    assert pool.acquire(0.0) == (True, 0)
    assert pool.acquire(1.0) == (False, 30)  # all live
    pool.release_unclean(5.0, 30.0)  # stale until 35
    assert pool.acquire(5.5) == (False, 30)  # ceil(29.5)
    assert pool.acquire(34.0) == (False, 1)
    pool.release_clean(34.0)
    assert pool.acquire(34.0) == (True, 0)
    assert pool.stale(34.9) == 1 and pool.stale(35.0) == 0  # expires exactly at 35
    assert pool.acquire(35.0) == (True, 0)
    assert pool.live == 2
    s = pool.series(100.0)
    # At 34 a slot was released and taken again: no change, no row.
    assert list(zip(s["t"].tolist(), s["live"].tolist(), s["stale"].tolist(), strict=True)) == [
        (0.0, 2, 0), (5.0, 1, 1), (35.0, 2, 0)]
    assert (s["cap"] == 2).all()


def test_slot_pool_series_includes_expiries_up_to_until():
    pool = SlotPool(3)
    pool.acquire(0.0)
    pool.release_unclean(1.0, 30.0)
    assert pool.series(20.0)["t"].tolist() == [0.0, 1.0]
    s = pool.series(31.0)
    assert s["t"].tolist() == [0.0, 1.0, 31.0] and s["stale"].tolist() == [0, 1, 0]
    assert pool.stale(10.0) == 1  # series() did not change the pool


def test_slot_pool_cap_zero_and_misuse():
    pool = SlotPool(0, retry_after_live_s=12.5)
    assert pool.acquire(0.0) == (False, 13)
    with pytest.raises(RuntimeError):
        pool.release_clean(0.0)
    with pytest.raises(ValueError):
        SlotPool(-1)


_OPS = st.lists(
    st.tuples(st.integers(0, 80),  # time step in quarter seconds
              st.sampled_from(["acquire", "clean", "unclean"]),
              st.integers(0, 160)),  # stale expiry in quarter seconds
    max_size=60)


@settings(max_examples=300, deadline=None)
@given(cap=st.integers(0, 4), ops=_OPS)
def test_slot_pool_against_reference(cap, ops):
    """Against a list of expiry times: the cap holds, decisions and Retry-After agree."""
    pool = SlotPool(cap, retry_after_live_s=30)
    live, expiries, now = 0, [], 0.0
    for step, op, exp_q in ops:
        now += step / 4
        stale = [e for e in expiries if e > now]
        if op == "acquire":
            ok, ra = pool.acquire(now)
            assert ok == (live + len(stale) < cap)
            if ok:
                live += 1
            elif not stale:
                assert ra == 30
            else:
                assert ra == max(1, math.ceil(min(stale) - now))
                # Retry-After is honest: waiting it out frees a slot.
                assert copy.deepcopy(pool).acquire(now + ra)[0]
        elif live > 0:
            if op == "clean":
                pool.release_clean(now)
            elif exp_q == 0:
                pool.release_unclean(now, 0.0)  # no expiry: as clean
            else:
                pool.release_unclean(now, exp_q / 4)
                expiries.append(now + exp_q / 4)
            live -= 1
        assert pool.live == live
        assert pool.stale(now) == len([e for e in expiries if e > now])
        assert pool.live + pool.stale(now) <= cap
    s = pool.series(now + 100)
    assert (np.diff(s["t"]) > 0).all()
    assert (s["live"] + s["stale"] <= cap).all() and (s["live"] >= 0).all()
