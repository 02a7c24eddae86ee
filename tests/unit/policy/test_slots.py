"""The websocket slot pool as a policy (sim/policy/slots.py), without SimPy.

Expected values come from the spec (8.3: the cap per selection, stale slots after an
unclean disconnect; 7: 435 with Retry-After = seconds until the earliest slot expires or
is released), worked out by hand along each timeline. The model-level timelines and a
Hypothesis comparison with a reference model are in tests/unit/model/test_websockets.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.config.tiers import CATALOG
from sim.policy.slots import SlotPool, summed_series, whole_seconds_until

# Spec 8.3, "Active connections" by selection (written out here, not read from the catalog).
SPEC_CAPS = {"Streams": 2, "Search": 0, "RPC": 0, "Streams + RPC": 3, "Streams + Search": 3,
             "RPC + Search": 0, "All 3 APIs": 3, "Professional bundle": 5,
             "Advanced bundle": 10}


def test_the_catalog_has_every_selection_of_the_spec():
    assert {t.name for t in CATALOG} >= SPEC_CAPS.keys()


@pytest.mark.parametrize("tier", [t for t in CATALOG if t.name in SPEC_CAPS],
                         ids=lambda t: t.name)
def test_each_selection_admits_exactly_its_cap(tier):
    cap = SPEC_CAPS[tier.name]
    pool = SlotPool(tier.ws_cap, retry_after_live_s=30)
    assert [pool.acquire(0.0) for _ in range(cap)] == [(True, 0)] * cap
    # Every slot live: 435 with the configured Retry-After, however often asked.
    assert pool.acquire(0.0) == (False, 30)
    assert pool.acquire(1_000.0) == (False, 30)
    assert pool.live == cap


def test_the_cap_counts_live_and_stale_slots():
    pool = SlotPool(3)
    for _ in range(3):
        pool.acquire(0.0)
    pool.release_unclean(10.0, 30.0)  # stale until 40
    pool.release_clean(10.0)          # free at once
    assert (pool.live, pool.stale(10.0)) == (1, 1)
    assert pool.acquire(10.0) == (True, 0)        # the cleanly released slot
    assert pool.acquire(10.0) == (False, 30)      # 2 live + 1 stale = cap: 40 - 10
    assert pool.acquire(39.5) == (False, 1)       # ceil(0.5)
    assert pool.acquire(40.0) == (True, 0)        # expired exactly at 40
    assert (pool.live, pool.stale(40.0)) == (3, 0)


def test_retry_after_points_at_the_earliest_stale_expiry():
    pool = SlotPool(2)
    pool.acquire(0.0)
    pool.acquire(0.0)
    pool.release_unclean(5.0, 30.0)   # until 35
    pool.release_unclean(6.0, 20.0)   # until 26: the earliest, though released later
    assert pool.acquire(10.0) == (False, 16)
    assert pool.acquire(25.2) == (False, 1)
    assert pool.acquire(26.0) == (True, 0)
    assert pool.acquire(26.0) == (False, 9)       # the other one, until 35
    assert pool.stale(34.999) == 1 and pool.stale(35.0) == 0


def test_an_unclean_release_without_expiry_is_a_clean_one():
    pool = SlotPool(1)
    pool.acquire(0.0)
    pool.release_unclean(3.0, 0.0)
    assert pool.stale(3.0) == 0 and pool.acquire(3.0) == (True, 0)


def test_retry_after_live_is_whole_seconds_and_cap_zero_always_refuses():
    assert SlotPool(0, retry_after_live_s=12.5).acquire(0.0) == (False, 13)
    assert SlotPool(0, retry_after_live_s=0.2).acquire(0.0) == (False, 1)  # at least 1


@pytest.mark.parametrize(("target", "now", "wait"), [
    (40.0, 10.0, 30), (40.0, 39.5, 1), (40.0, 39.999, 1), (40.0, 40.0, 1), (10.5, 0.0, 11),
])
def test_whole_seconds_until(target, now, wait):
    assert whole_seconds_until(target, now) == wait
    assert now + wait >= target  # waiting it out always reaches the target


def test_releasing_without_a_live_slot_is_an_error():
    pool = SlotPool(2)
    with pytest.raises(RuntimeError):
        pool.release_clean(0.0)
    with pytest.raises(RuntimeError):
        pool.release_unclean(0.0, 30.0)
    with pytest.raises(ValueError):
        SlotPool(-1)


def test_series_steps_and_summed_series_of_two_accounts():
    a, b = SlotPool(2), SlotPool(1)
    a.acquire(0.0)
    a.acquire(0.0)
    b.acquire(5.0)
    a.release_unclean(10.0, 30.0)  # stale until 40
    b.release_clean(20.0)
    sa, sb = a.series(100.0), b.series(100.0)
    assert list(zip(sa["t"].tolist(), sa["live"].tolist(), sa["stale"].tolist(),
                    strict=True)) == [(0.0, 2, 0), (10.0, 1, 1), (40.0, 1, 0)]
    assert list(zip(sb["t"].tolist(), sb["live"].tolist(), strict=True)) == [
        (0.0, 0), (5.0, 1), (20.0, 0)]
    total = summed_series([sa, sb])
    # At every time either pool changed: the sum of each pool's state then.
    assert total["t"].tolist() == [0.0, 5.0, 10.0, 20.0, 40.0]
    assert total["live"].tolist() == [2, 3, 2, 1, 1]
    assert total["stale"].tolist() == [0, 0, 1, 1, 0]
    assert (total["cap"] == 3).all()
    assert summed_series([sa]) is sa
    assert np.all(a.series(20.0)["t"] == [0.0, 10.0])  # the expiry at 40 is after `until`
