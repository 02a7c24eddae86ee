"""``wake_times``: a SimPy process's wake times, computed for a block at once, equal the
one-at-a-time recurrence ``e = now + (t - now)`` bit for bit (the model's publish times
and so every websocket delivery depend on the last bit)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.model.websockets.publish import wake_times


def one_at_a_time(e: float, raw) -> list[float]:
    out = []
    for t in raw:
        e = e + (t - e)
        out.append(e)
    return out


@settings(max_examples=500, deadline=None)
@given(e=st.floats(0, 1e6), gaps=st.lists(st.floats(1e-9, 1e7), min_size=1, max_size=60))
def test_a_block_at_once_equals_one_at_a_time(e, gaps):
    raw = e + np.cumsum(gaps)
    assert wake_times(e, raw) == one_at_a_time(e, raw)


@settings(max_examples=500, deadline=None)
@given(times=st.lists(st.floats(0, 1e300), min_size=2, max_size=40))
def test_any_increasing_floats_too(times):
    """Over every magnitude, where the recurrence does round (far from a run's times)."""
    times.sort()
    raw = np.array(times[1:])
    assert wake_times(times[0], raw) == one_at_a_time(times[0], raw)


def test_a_rounded_time_is_carried_to_the_next():
    """``1 + (2**53 + 2 - 1)`` rounds to ``2**53`` (ties to even): the next time is
    computed from the rounded one, as the process computes it."""
    big = 2.0**53
    raw = np.array([big + 2, big + 6, big + 8])
    expected = one_at_a_time(1.0, raw)
    assert expected[0] == big != raw[0]  # the case is not vacuous
    assert wake_times(1.0, raw) == expected


def test_a_busy_stream_wakes_at_its_raw_times():
    raw = 3600.0 + np.cumsum(np.random.default_rng(4).exponential(0.05, 10_000))
    assert wake_times(3599.9, raw) == raw.tolist() == one_at_a_time(3599.9, raw)
