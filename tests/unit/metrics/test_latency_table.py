"""The latency plot's table: a fixed number of points that lie on the exact empirical CDF."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.metrics.tables import ecdf_table


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 5000), points=st.integers(1, 300), seed=st.integers(0, 2**32 - 1),
       ties=st.booleans())
def test_table_points_lie_on_the_empirical_cdf(n, points, seed, ties):
    rng = np.random.default_rng(seed)
    x = rng.lognormal(3.0, 1.0, n)
    if ties:
        x = np.round(x, -1)  # many equal values
    table = ecdf_table(x, points)
    if n <= points:
        np.testing.assert_array_equal(table, np.sort(x))
        return
    assert len(table) == points and np.all(np.diff(table) >= 0)
    # Independently of how the table is built: the k-th point is the smallest value whose
    # empirical CDF reaches k / points, i.e. F(x_k) >= k/points > F(x_k^-).
    k = np.arange(1, points + 1)
    at_or_below = np.array([(x <= v).sum() for v in table])
    below = np.array([(x < v).sum() for v in table])
    assert np.all(at_or_below * points >= k * n)
    assert np.all(below * points < k * n)
    assert table[-1] == x.max()
