"""The shared replay walk (:class:`sim.calibration.replay_core.Timeline`): settles and
slot releases applied up to each attempt's time, in a fixed order at equal times."""

from __future__ import annotations

import math

from sim.calibration.replay_core import FIRST, RECORDED, Timeline
from sim.config.scenario import LimiterSettings
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
