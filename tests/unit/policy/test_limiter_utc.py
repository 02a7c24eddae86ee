"""``alignment = "utc"`` with ``phase_s``: windows on the service's own clock.

Expected window starts are worked out by hand from the definition (the UTC clock at
simulation time ``t`` reads ``t + day_offset_s``; windows start where it reads
``phase_s + 12 k``), never read back from the limiter.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sim.config.scenario import LimiterSettings
from sim.core.errors import CapsimError
from sim.policy.limiter import OK, THROTTLED, CULimiter
from sim.policy.limiters import make_limiter


def test_phase_moves_the_boundary():
    # day_offset 0, phase 5: windows [-7, 5), [5, 17), ...
    lim = CULimiter(100, alignment="utc", phase_s=5.0)
    assert lim.reserve(0.0, 100) == OK
    assert lim.reserve(4.99, 1) == THROTTLED        # still the window [-7, 5)
    assert lim.reserve(5.0, 100) == OK              # a new window at 5
    assert lim.retry_after(4.2) == 1                # ceil(5 - 4.2)
    assert lim.retry_after(5.0) == 12
    assert lim.window_stats().start_s[:2] == [-7.0, 5.0]


def test_day_offset_counts_on_the_clock():
    # Sim time 0 is 00:00:03 UTC; phase 5 -> boundaries where t + 3 = 5 + 12k: t = 2, 14
    lim = CULimiter(100, alignment="utc", phase_s=5.0, day_offset_s=3.0)
    assert lim.reserve(1.9, 100) == OK
    assert lim.reserve(1.95, 1) == THROTTLED
    assert lim.reserve(2.0, 100) == OK
    assert lim.retry_after(13.5) == 1               # next start at 14


def test_phase_zero_utc_equals_epoch_on_a_midnight_start():
    a = CULimiter(100, alignment="utc", phase_s=0.0)
    b = CULimiter(100, alignment="epoch")
    for t in (0.0, 3.0, 11.9, 12.0, 30.0, 47.5):
        assert a.reserve(t, 40) == b.reserve(t, 40)
        assert a.retry_after(t) == b.retry_after(t)


@given(t=st.floats(0, 1e6), phase=st.floats(0, 11.999), offset=st.floats(0, 86399))
def test_retry_after_lands_on_the_phase(t, phase, offset):
    lim = CULimiter(100, alignment="utc", phase_s=phase, day_offset_s=offset)
    wait = lim.retry_after(t)
    # the next boundary on the clock, (t + offset - phase) mod 12 from the previous one
    to_next = 12.0 - ((t + offset - phase) % 12.0)
    assume(1e-6 < to_next < 12.0 - 1e-6)  # on a boundary, float rounding picks the side
    assert wait >= 1
    assert wait - 1 < to_next + 1e-6 and (to_next <= wait + 1e-6 or wait == 1)


def test_windows_hold_across_many_boundaries():
    # phase 7.3, offset 0.1: boundaries at t = 7.2 + 12 k. Just after each one a full
    # budget fits; just before the next it does not (the window must not reopen).
    lim = CULimiter(10, alignment="utc", phase_s=7.3, day_offset_s=0.1)
    for k in range(2000):
        b = 7.2 + 12.0 * k
        assert lim.reserve(b + 1e-6, 10) == OK
        assert lim.reserve(b + 12.0 - 1e-6, 10) == THROTTLED


def test_bad_phase_is_refused():
    with pytest.raises(ValueError):
        CULimiter(100, alignment="utc", phase_s=12.0)


def test_scenario_settings_reach_the_limiter():
    s = LimiterSettings(alignment="utc", phase_s=4.5)
    lim = make_limiter(100, s, day_offset_s=0.0)
    assert lim.reserve(4.4, 100) == OK and lim.reserve(4.5, 100) == OK


@pytest.mark.parametrize("table", [{"phase_s": 3.0}, {"alignment": "utc", "phase_s": 12},
                                   {"alignment": "utc", "phase_s": -1}])
def test_scenario_refuses_bad_phase(table):
    with pytest.raises((ValueError, CapsimError)):
        LimiterSettings(**table)
