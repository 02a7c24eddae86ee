"""Confidence intervals over replications: tabulated values and coverage over seeds."""

import math

import numpy as np
import pytest

from sim.core.intervals import Interval, mean_interval
from sim.core.rng import replication_seed, stream


def test_interval_matches_hand_computation_with_tabulated_t():
    # [1, 2, 3]: mean 2, sample sd 1; t(0.975, 2) = 4.3027 from any t table.
    iv = mean_interval([1.0, 2.0, 3.0])
    assert iv.mean == 2.0 and iv.n == 3
    assert iv.half_width == pytest.approx(4.3027 / math.sqrt(3), rel=1e-4)


def test_one_value_has_no_interval_and_missing_values_are_left_out():
    assert mean_interval([5.0]).half_width is None
    iv = mean_interval([None, 1.0, float("nan"), 3.0])
    assert iv.n == 2 and iv.mean == 2.0 and iv.half_width is not None
    assert mean_interval([]).n == 0


def test_coverage_of_a_known_mean_over_many_seeds():
    # 95 % intervals from n = 5 normal samples cover the true mean in 95 % of trials;
    # over 4,000 trials the binomial standard error is 0.0034, so allow 4 SE.
    rng = np.random.default_rng(20261123)
    trials, true_mean = 4000, 3.0
    covered = 0
    for _ in range(trials):
        iv = mean_interval(rng.normal(true_mean, 2.0, 5).tolist())
        covered += iv.low <= true_mean <= iv.high
    se = math.sqrt(0.95 * 0.05 / trials)
    assert abs(covered / trials - 0.95) < 4 * se


def test_overlap():
    a, b = Interval(1.0, 0.5, 3), Interval(2.0, 0.4, 3)
    assert not a.overlaps(b)
    assert a.overlaps(Interval(1.4, 0.0, 3))
    assert Interval(1.0, None, 1).overlaps(Interval(1.2, 0.3, 3))


def test_replication_seeds():
    assert replication_seed(7, 0) == 7
    seeds = {replication_seed(7, r) for r in range(1, 50)}
    assert len(seeds) == 49 and 7 not in seeds
    assert replication_seed(7, 3) == replication_seed(7, 3)
    assert replication_seed(8, 3) != replication_seed(7, 3)
    a = stream(replication_seed(7, 1), "x").random(4)
    b = stream(replication_seed(7, 2), "x").random(4)
    assert not np.allclose(a, b)
    with pytest.raises(ValueError):
        replication_seed(7, -1)
