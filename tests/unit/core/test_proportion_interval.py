"""The Wilson interval of a share of replications: closed-form values and coverage."""

import functools
import math
from statistics import NormalDist

import numpy as np
import pytest

from sim.core.intervals import proportion_interval

Z = NormalDist().inv_cdf(0.975)  # 1.959964..., independent of scipy


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson's score interval written out (Wilson 1927; Agresti and Coull 1998, eq. 2)."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def test_ten_of_ten_by_hand():
    # k = n: the lower bound reduces to n / (n + z^2) = 10 / 13.8415 = 0.7225; the upper is 1.
    iv = proportion_interval(10, 10)
    assert iv.low == pytest.approx(10 / (10 + Z * Z), abs=1e-12)
    assert iv.low == pytest.approx(0.7225, abs=1e-4)
    assert iv.high == pytest.approx(1.0, abs=1e-12)
    assert iv.share == 1.0 and (iv.count, iv.n) == (10, 10)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (9, 10), (5, 10), (1, 3), (37, 50), (999, 1000)])
def test_matches_the_closed_form(k, n):
    low, high = wilson(k, n)
    iv = proportion_interval(k, n)
    assert (iv.low, iv.high) == (pytest.approx(max(0.0, low), abs=1e-9),
                                 pytest.approx(min(1.0, high), abs=1e-9))


def test_nine_of_ten_is_the_issue_example():
    # "held in 9 of 10 replications (95 % interval 60-98 %)".
    iv = proportion_interval(9, 10)
    assert round(100 * iv.low) == 60 and round(100 * iv.high) == 98


def _coverage(n: int, p: float) -> float:
    """P(the interval of Binomial(n, p) covers p), summed over every outcome k."""
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k)
               for k, (low, high) in enumerate(_intervals(n)) if low <= p <= high)


@functools.cache
def _intervals(n: int) -> tuple[tuple[float, float], ...]:
    return tuple((iv.low, iv.high) for iv in map(lambda k: proportion_interval(k, n),
                                                 range(n + 1)))


@pytest.mark.parametrize("n", [5, 10, 20, 50])
def test_mean_coverage_is_nominal(n):
    # Brown, Cai and DasGupta (2001), fig. 5: averaged over p the Wilson interval covers
    # at about its nominal 95 % (the Wald interval averages 0.85-0.90 at these n).
    grid = [i / 200 for i in range(1, 200)]
    mean = sum(_coverage(n, p) for p in grid) / len(grid)
    assert 0.945 <= mean <= 0.96


def test_coverage_over_seeds_agrees_with_the_exact_sum():
    # 4,000 draws of Binomial(10, 0.3), each a "run of 10 replications": the share of
    # intervals covering 0.3 is the exact coverage within 4 binomial standard errors.
    rng = np.random.default_rng(20261128)
    n, p, trials = 10, 0.3, 4000
    ks = rng.binomial(n, p, trials)
    covered = sum(_intervals(n)[k][0] <= p <= _intervals(n)[k][1] for k in ks)
    exact = _coverage(n, p)
    assert abs(covered / trials - exact) < 4 * math.sqrt(exact * (1 - exact) / trials)
    assert exact > 0.9


@pytest.mark.parametrize(("k", "n"), [(-1, 10), (11, 10), (0, 0)])
def test_impossible_counts_are_refused(k, n):
    with pytest.raises(ValueError):
        proportion_interval(k, n)
