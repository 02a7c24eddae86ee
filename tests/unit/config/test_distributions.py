"""Distributions against their own mean/variance and against independent closed forms."""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError

from sim.config.distributions import (
    Beta,
    Constant,
    Distribution,
    Exponential,
    IntUniform,
    LogNormal,
    ShiftedPoisson,
    Uniform,
)
from sim.core.rng import stream

N = 200_000
# Two-sided normal tail beyond 5 standard errors is 6e-7 per check.
Z = 5.0

DIST = TypeAdapter(Distribution)

EXAMPLES = [
    Constant(value=3.5),
    Constant(value=0.0),
    Exponential(mean=2.0),
    Exponential(mean=0.05),
    Uniform(low=2.0, high=5.0),
    Uniform(low=1.0, high=1.0),
    LogNormal(median=0.2, sigma=0.5),
    LogNormal(median=3.0, sigma=1.0),
    Beta(a=2.0, b=3.0),
    Beta(a=0.5, b=0.5),
    IntUniform(low=1, high=6),
    IntUniform(low=4, high=4),
    ShiftedPoisson(lam=3.0, shift=1),
    ShiftedPoisson(lam=0.0),
    ShiftedPoisson(lam=250.0, shift=10),
]


def assert_sample_moments(dist, seed: int = 0, n: int = N) -> np.ndarray:
    """``n`` samples agree with ``dist.mean`` and ``dist.variance``.

    The sample mean has standard error sqrt(σ²/n); the sample variance has standard error
    sqrt((μ4 - σ⁴)/n), with the fourth central moment μ4 estimated from the sample, so
    the check holds for skewed and heavy-ish tails alike (kept to sigma <= 1 for the
    log-normal, where the sample fourth moment is still well behaved at n = 200k).
    Degenerate distributions (variance 0) must reproduce the mean exactly.
    """
    x = dist.sample(stream(seed, "test", type(dist).__name__), n)
    assert x.shape == (n,) and x.dtype == np.float64
    if dist.variance == 0:
        np.testing.assert_array_equal(x, dist.mean)
        return x
    s2 = x.var(ddof=1)
    assert abs(x.mean() - dist.mean) <= Z * math.sqrt(dist.variance / n), (x.mean(), dist.mean)
    m4 = np.mean((x - x.mean()) ** 4)
    assert abs(s2 - dist.variance) <= Z * math.sqrt((m4 - s2 * s2) / n), (s2, dist.variance)
    return x


@pytest.mark.parametrize("dist", EXAMPLES, ids=lambda d: repr(d))
def test_samples_match_declared_mean_and_variance(dist):
    assert_sample_moments(dist)


def test_every_distribution_kind_is_exercised():
    union = typing.get_args(typing.get_args(Distribution)[0])
    assert set(union) == {type(d) for d in EXAMPLES}


@pytest.mark.parametrize(
    ("dist", "mean", "variance"),
    [
        (Constant(value=3.5), 3.5, 0.0),
        (Exponential(mean=2.0), 2.0, 4.0),
        (Uniform(low=2.0, high=5.0), 3.5, 0.75),  # (b - a)² / 12 = 9 / 12
        (LogNormal(median=1.0, sigma=1.0), math.sqrt(math.e), (math.e - 1) * math.e),
        (Beta(a=2.0, b=3.0), 0.4, 0.04),  # ab / ((a+b)²(a+b+1)) = 6 / 150
        (IntUniform(low=1, high=6), 3.5, 35 / 12),  # a fair die
        (ShiftedPoisson(lam=3.0, shift=1), 4.0, 3.0),
    ],
)
def test_closed_forms_by_hand(dist, mean, variance):
    assert dist.mean == pytest.approx(mean)
    assert dist.variance == pytest.approx(variance)


def test_lognormal_median_is_the_median():
    dist = LogNormal(median=0.3, sigma=0.8)
    x = dist.sample(stream(1, "test"), N)
    # The sample median has SE 1/(2 f(m) sqrt(n)); at the median the log-normal density
    # is f(m) = 1/(m σ sqrt(2π)), so SE = m σ sqrt(2π)/(2 sqrt(n)) ≈ 6.7e-4 here.
    se = 0.3 * 0.8 * math.sqrt(2 * math.pi) / (2 * math.sqrt(N))
    assert abs(np.median(x) - 0.3) <= Z * se
    # And log(x) is normal with mean log(median) and standard deviation sigma.
    assert np.log(x).std() == pytest.approx(0.8, rel=Z * math.sqrt(0.5 / N))


def test_exponential_mean_and_memorylessness():
    x = Exponential(mean=2.0).sample(stream(2, "test"), N)
    assert abs(x.mean() - 2.0) <= Z * 2.0 / math.sqrt(N)
    # P(X > 3) = e^(-1.5); given X > 1, X - 1 is again exponential with mean 2.
    p = math.exp(-1.5)
    assert abs(np.mean(x > 3.0) - p) <= Z * math.sqrt(p * (1 - p) / N)
    tail = x[x > 1.0] - 1.0
    assert abs(tail.mean() - 2.0) <= Z * 2.0 / math.sqrt(tail.size)


def test_discrete_supports():
    die = IntUniform(low=1, high=6).sample(stream(3, "test"), 6000)
    assert set(np.unique(die)) == {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}
    counts = ShiftedPoisson(lam=2.0, shift=3).sample(stream(4, "test"), 6000)
    assert counts.min() >= 3 and np.all(counts == np.round(counts))
    u = Uniform(low=2.0, high=5.0).sample(stream(5, "test"), 6000)
    assert u.min() >= 2.0 and u.max() <= 5.0
    b = Beta(a=0.5, b=0.5).sample(stream(6, "test"), 6000)
    assert b.min() >= 0.0 and b.max() <= 1.0


def test_same_stream_same_samples():
    d = LogNormal(median=1.0, sigma=0.5)
    np.testing.assert_array_equal(d.sample(stream(7, "a"), 100), d.sample(stream(7, "a"), 100))


@pytest.mark.parametrize("dist", EXAMPLES, ids=repr)
@pytest.mark.parametrize("sizes", [(256, 512, 1024), (1, 255, 7, 4096), (0, 3000, 0, 1)])
def test_samples_in_pieces_equal_one_sample(dist, sizes):
    """A run draws a worker's think times (and its requests) in chunks whose sizes are
    an engine's choice (256 in the SimPy model; doubling up to 8192 in the compiled
    engine): the values must not depend on them."""
    pieces = stream(7, "pieces")
    got = np.concatenate([dist.sample(pieces, n) for n in sizes])
    np.testing.assert_array_equal(got, dist.sample(stream(7, "pieces"), sum(sizes)))


def test_parsed_by_dist_field():
    assert DIST.validate_python({"dist": "exponential", "mean": 2.0}) == Exponential(mean=2.0)
    assert DIST.validate_python({"dist": "poisson", "lam": 1.5}) == ShiftedPoisson(lam=1.5)
    for d in EXAMPLES:
        assert DIST.validate_python(d.model_dump(by_alias=True)) == d


@pytest.mark.parametrize(
    "data",
    [
        {"dist": "uniform", "low": 5.0, "high": 2.0},
        {"dist": "int_uniform", "low": 3, "high": 1},
        {"dist": "exponential", "mean": 0.0},
        {"dist": "exponential", "mean": -1.0},
        {"dist": "lognormal", "median": 1.0, "sigma": 6.0},
        {"dist": "lognormal", "median": 0.0, "sigma": 1.0},
        {"dist": "beta", "a": 0.0, "b": 1.0},
        {"dist": "constant", "value": -1.0},
        {"dist": "poisson", "lam": -0.5},
        {"dist": "constant", "value": 1.0, "scale": 2.0},
        {"dist": "weibull", "shape": 2.0},
    ],
)
def test_invalid_distributions_are_rejected(data):
    with pytest.raises(ValidationError):
        DIST.validate_python(data)


def test_uniform_order_error_says_what_is_expected():
    with pytest.raises(ValidationError, match="high >= low"):
        Uniform(low=5.0, high=2.0)
