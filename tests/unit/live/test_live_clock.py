"""The emulator's clock refuses a time scale it cannot keep: at ``inf`` every sleep is
0 s and the server's loop spins a CPU, deaf to Ctrl-C (issue 33); ``nan`` compares
false with everything. The CLI refuses both while parsing (tests/unit/cli/
test_typo_bounds.py); the library refuses them too."""

from __future__ import annotations

import math

import pytest

from sim.live.clock import ServiceClock


@pytest.mark.parametrize("scale", [math.inf, math.nan, 0.0, -1.0])
def test_a_clock_it_cannot_keep_is_refused(scale):
    with pytest.raises(ValueError, match="positive"):
        ServiceClock(0.0, scale)


def test_a_finite_scale_maps_service_time_to_wall_time():
    clock = ServiceClock(100.0, 10.0)
    assert clock.at(103.0) == pytest.approx(30.0)  # 3 wall seconds: 30 service seconds
