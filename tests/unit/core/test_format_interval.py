"""Intervals in tables: the mean and the half-width to the same decimals, never in
exponent notation (issue 35: a sweep printed ``474467 ± 2e+03``)."""

from __future__ import annotations

import pytest

from sim.core.intervals import format_interval


@pytest.mark.parametrize("mean, hw, text", [
    (474467.2, 1960.3, "474,467 ± 1,960"),   # half-width 2 significant figures: 0 decimals
    (0.01234, 0.00412, "0.0123 ± 0.0041"),   # 4 decimals for both
    (1251.92, 35.2, "1,252 ± 35"),
    (12.3456, 0.25, "12.35 ± 0.25"),
    (5.0, 0.0, "5 ± 0"),                      # replications that agree exactly
])
def test_mean_and_half_width_share_their_decimals(mean, hw, text):
    assert format_interval(mean, hw) == text


@pytest.mark.parametrize("mean, text", [(474467.2, "474,467"), (0.012345, "0.0123"),
                                        (2.5, "2.50"), (None, "–"), (float("nan"), "–")])
def test_a_mean_alone(mean, text):
    assert format_interval(mean) == text


def test_never_an_exponent():
    for x in (1e-7, 3.2e9, 123456789.0):
        assert "e" not in format_interval(x, x / 50) and "e" not in format_interval(x)
