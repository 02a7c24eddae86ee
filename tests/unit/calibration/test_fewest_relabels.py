"""The price-free count of the phase screen with mislabelled rows
(:func:`sim.calibration.systems._fewest_relabels`): within a window and reservation
the recorded outcomes must read admitted, then throttled, and the count is the fewest
relabels that make them so, worked out by hand here."""

from __future__ import annotations

import numpy as np
import pytest

from sim.calibration.systems import _fewest_relabels


def count(pattern: str, seg=None, typ=None) -> int:
    n = len(pattern)
    adm = np.array([c == "A" for c in pattern])
    return _fewest_relabels(np.arange(n, dtype=float),
                            np.zeros(n) if seg is None else np.asarray(seg, float),
                            np.zeros(n, np.int64) if typ is None else np.asarray(typ),
                            adm)


@pytest.mark.parametrize(("pattern", "fewest"), [
    ("AAATTT", 0),        # a clean window
    ("AATAAT", 1),        # one mislabelled throttle early: one, not once per admission after
    ("AAATTATT", 1),      # one mislabelled admission among throttles
    ("TTAAA", 2),         # relabel the two throttles (fewer than the three admissions)
    ("TTTA", 1),
    ("", 0),
])
def test_fewest_relabels_by_hand(pattern, fewest):
    assert count(pattern) == fewest


def test_windows_and_reservations_are_counted_apart():
    # "AT" then "TA" in another window: only the second needs a relabel; the same two
    # windows as one would need one as well, but a throttle of another reservation
    # before an admission is no contradiction
    assert count("ATTA", seg=[0, 0, 12, 12]) == 1
    assert count("TA", typ=[1, 2]) == 0
    assert count("TATA", seg=[0, 0, 12, 12]) == 2
