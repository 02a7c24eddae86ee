"""The websocket side of the compiled engine (sim/compiled/websockets.py): the limiter
adapter against :class:`CULimiter`, the shared event counter, and the hand-over order
between the loop and the websocket events (SimPy's ``(time, priority, id)``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from sim.compiled import loop as lp  # noqa: E402
from sim.compiled import policies as po  # noqa: E402
from sim.compiled.websockets import (  # noqa: E402
    NEED_ROOM,
    ArrayLimiter,
    SharedSeq,
    WebsocketSide,
    lim_spend,
)
from sim.policy.limiter import CULimiter  # noqa: E402

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _state(lim: CULimiter, n_windows: int, n_days: int, day_offset: float) -> dict:
    LF, LI, WF, WI, DF, DI = po.limiter_state_of(lim, n_windows=n_windows, n_days=n_days)
    GF = np.zeros(lp.GF_NF)
    GF[lp.GF_DAY_LIMIT] = (n_days - 1) * po.DAY_S - day_offset - 1.0
    return dict(LF=LF, LI=LI, WF=WF, WI=WI, DF=DF, DI=DI, GF=GF)


def _grower(s: dict, day_offset: float, calls: list):
    """Double the window and day arrays (as the engine grows them), noting each call."""

    def make_room(now: float) -> None:
        calls.append(now)
        n = s["WF"].shape[1] * 2
        for k in ("WF", "WI"):
            a = s[k]
            s[k] = np.zeros((a.shape[0], n, *a.shape[2:]), dtype=a.dtype)
            s[k][:, : a.shape[1]] = a
        days = s["DF"].shape[1] * 2
        DF = np.full((1, days, po.D_NF), np.nan)
        DF[:, :, po.D_USED] = 0.0
        DF[:, : s["DF"].shape[1]] = s["DF"]
        DI = np.zeros((1, days), dtype=s["DI"].dtype)
        DI[:, : s["DI"].shape[1]] = s["DI"]
        s["DF"], s["DI"] = DF, DI
        s["GF"][lp.GF_DAY_LIMIT] = (days - 1) * po.DAY_S - day_offset - 1.0

    return make_room


@SETTINGS
@given(budget=st.sampled_from([100.0, 250.5]),
       alignment=st.sampled_from(["epoch", "first-hit", "utc"]),
       allowance=st.sampled_from([None, 300.0, 1000.25]),
       day_offset=st.sampled_from([0.0, 86_390.0]),
       ops=st.lists(st.tuples(st.floats(0.0, 9_000.0), st.booleans(),
                              st.floats(0.0, 130.0)), min_size=1, max_size=60))
def test_array_limiter_spends_as_the_limiter(budget, alignment, allowance, day_offset, ops):
    """Every spend and Retry-After answer equal to CULimiter's; the windows and daily
    ledger equal at the end; arrays of 2 windows and 2 days grow on the way."""
    lim = CULimiter(budget, alignment=alignment, daily_allowance_cu=allowance,
                    day_offset_s=day_offset)
    s = _state(lim, 2, 2, day_offset)
    calls: list = []
    adapter = ArrayLimiter(s, 0, _grower(s, day_offset, calls))
    now = 0.0
    for dt, spend, cost in ops:
        now += dt
        if spend:
            got = adapter.spend(now, cost)
            assert got == int(lim.spend(now, cost)) and got != NEED_ROOM
        else:
            assert adapter.retry_after(now) == lim.retry_after(now)
    n = s["LI"][0, po.LI_NWIN]
    stats = lim.window_stats()
    assert s["WF"][0, :n, po.W_START].tolist() == stats.start_s
    assert s["WF"][0, :n, po.W_RESERVED].tolist() == stats.reserved_cu
    assert s["WF"][0, :n, po.W_SETTLED].tolist() == stats.settled_cu
    assert s["WI"][0, :n].T.tolist() == [stats.admitted, stats.throttled, stats.phantom]
    assert {d: s["DF"][0, d, po.D_USED] for d in np.flatnonzero(s["DI"][0])} == \
        lim.daily_used


def test_a_spend_without_room_changes_nothing_and_asks_for_it():
    lim = CULimiter(100.0)
    s = _state(lim, 2, 2, 0.0)
    before = {k: v.copy() for k, v in s.items()}
    # the last window row is taken: a new window would need one more
    s["LI"][0, po.LI_NWIN] = 1
    assert lim_spend(s["LF"], s["LI"], s["WF"], s["WI"], s["DF"], s["DI"], s["GF"], 0, 5.0,
                     10.0) == NEED_ROOM
    s["LI"][0, po.LI_NWIN] = 0
    # past the last day row
    late = s["GF"][lp.GF_DAY_LIMIT]
    assert lim_spend(s["LF"], s["LI"], s["WF"], s["WI"], s["DF"], s["DI"], s["GF"], 0, late,
                     10.0) == NEED_ROOM
    for k, v in before.items():
        assert np.array_equal(s[k], v, equal_nan=True), k
    calls: list = []
    adapter = ArrayLimiter(s, 0, _grower(s, 0.0, calls))
    assert adapter.spend(late, 10.0) == po.OK and calls == [late]


def test_shared_counter_numbers_both_sides_in_one_sequence():
    G = np.zeros(po.G_NI, dtype=np.int64)
    seq = SharedSeq(G)
    G[po.G_SEQ] = 5  # the loop scheduled 5 events
    assert [next(seq), next(seq)] == [5, 6]
    G[po.G_SEQ] += 1  # the loop takes 7
    assert next(seq) == 8 and G[po.G_SEQ] == 9


class _Ticks:
    """A stand-in for the model's Websockets: processes that note when they run."""

    def __init__(self, env, plan):
        self.env, self.plan, self.ran = env, plan, []

    def start(self):
        for name, delays in self.plan:
            self.env.process(self._proc(name, delays))

    def _proc(self, name, delays):
        self.ran.append((name, self.env.now))
        for d in delays:
            yield self.env.timeout(d)
            self.ran.append((name, self.env.now))


def _side(plan, seq0=0):
    s = dict(G=np.zeros(po.G_NI, dtype=np.int64), GF=np.zeros(lp.GF_NF),
             GS=np.zeros(lp.GS_NI, dtype=np.int64))
    s["G"][po.G_SEQ] = seq0
    side = WebsocketSide(s, [], [], lambda env, admissions: _Ticks(env, plan))
    side.start()
    return s, side


def _head(s, t, key):
    s["GF"][lp.GF_HEAD_T], s["GS"][lp.GS_HEAD_KEY] = t, key


def test_processes_start_urgent_after_the_loops_first_events():
    # the loop took seqs 0-2 (the feeder's start and two workers): the processes' starts
    # are ids 3 and 4, URGENT at t=0
    s, side = _side([("a", [1.0]), ("b", [1.0])], seq0=3)
    assert s["GF"][lp.GF_WS_T] == 0.0 and s["GS"][lp.GS_WS_KEY] == 3
    _head(s, 0.0, 0)  # the feeder's start (URGENT, id 0) comes first: nothing runs
    side.run_until_head()
    assert side.ws.ran == []
    _head(s, 0.0, lp.NORMAL_KEY + 1)  # a NORMAL event at t=0: both starts come before it
    side.run_until_head()
    assert side.ws.ran == [("a", 0.0), ("b", 0.0)]
    # their timeouts at t=1 took ids 5 and 6 (NORMAL)
    assert s["GF"][lp.GF_WS_T] == 1.0 and s["GS"][lp.GS_WS_KEY] == lp.NORMAL_KEY + 5


def test_equal_times_go_by_event_id():
    # starts: ids 0 and 1; a's timeout to t=1 id 2, b's to t=0.5 id 3
    s, side = _side([("a", [1.0]), ("b", [0.5, 0.5])])
    _head(s, 0.0, lp.NORMAL_KEY + 99)
    side.run_until_head()
    s["G"][po.G_SEQ] += 1  # the loop schedules an event at t=1: id 4
    _head(s, 1.0, lp.NORMAL_KEY + 4)
    side.run_until_head()
    # b at 0.5 schedules its next at t=1 with id 5: after the loop's; a's (id 2) before
    assert side.ws.ran == [("a", 0.0), ("b", 0.0), ("b", 0.5), ("a", 1.0)]
    assert s["GF"][lp.GF_WS_T] == 1.0 and s["GS"][lp.GS_WS_KEY] == lp.NORMAL_KEY + 5
    _head(s, math.inf, 0)  # the loop is done: everything left runs
    side.run_until_head()
    assert side.ws.ran[-1] == ("b", 1.0) and s["GF"][lp.GF_WS_T] == math.inf
