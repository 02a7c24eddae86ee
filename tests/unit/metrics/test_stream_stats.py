"""Exact statistics of a column read in chunks, in bounded memory: held to independent
references (numpy's sort and percentile on the whole column, Python's math.fsum), with
budgets small enough that every column spills sorted runs to disk and merges them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.metrics import stream_stats
from sim.metrics.stream_stats import ExactSum, OrderStatistics

_KINDS = ("lognormal", "few distinct", "mostly zeros", "normal")


def _column(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "lognormal":
        return rng.lognormal(3.0, 1.0, n)
    if kind == "few distinct":
        return rng.integers(0, 7, n).astype(float)  # ties everywhere
    if kind == "mostly zeros":
        return np.where(rng.random(n) < 0.8, 0.0, rng.exponential(5.0, n))
    return rng.normal(0.0, 1.0, n)


def _chunks(x: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    cuts = np.sort(rng.integers(0, len(x) + 1, int(rng.integers(0, 12))))
    return np.split(x, cuts)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 3000), kind=st.sampled_from(_KINDS), seed=st.integers(0, 2**32 - 1),
       run_values=st.integers(1, 500), merge_values=st.integers(1, 400))
def test_order_statistics_match_the_sorted_column(n, kind, seed, run_values, merge_values,
                                                  monkeypatch_block):
    rng = np.random.default_rng(seed)
    x = _column(kind, n, rng)
    stats = OrderStatistics(lower_bound=0.0 if kind == "mostly zeros" else None,
                            run_values=run_values, merge_values=merge_values)
    for part in _chunks(x, rng):
        stats.add(part)
    assert stats.count == n
    ranks = rng.integers(0, n, 40)
    np.testing.assert_array_equal(stats.values_at(ranks), np.sort(x)[ranks])
    q = [0, 0.1, 1, 33.3, 50, 95, 99, 99.9, 100]
    # numpy's own percentile of the whole column, bit for bit
    np.testing.assert_array_equal(stats.percentile(q), np.percentile(x, q))
    stats.close()


@pytest.fixture
def monkeypatch_block(monkeypatch):
    """Merge blocks of a few values, so a merge takes many rounds."""
    monkeypatch.setattr(stream_stats, "_MIN_BLOCK", 3)


def test_a_long_column_spills_and_merges():
    rng = np.random.default_rng(7)
    x = rng.exponential(40.0, 50_000)
    stats = OrderStatistics(run_values=4_000, merge_values=3_000)
    for part in np.array_split(x, 37):
        stats.add(part)
    assert stats.spilled and stats.in_memory() is None
    np.testing.assert_array_equal(stats.values_at(np.arange(len(x))), np.sort(x))
    # percentiles from two order statistics each, as numpy interpolates them
    q = np.linspace(0, 100, 201)
    np.testing.assert_array_equal(stats.percentile(q), np.percentile(x, q))


def test_the_lower_bound_is_counted_not_stored():
    stats = OrderStatistics(lower_bound=0.0, run_values=10)
    stats.add(np.zeros(1000))
    stats.add(np.array([3.0, 1.0, 2.0]))
    assert stats.count == 1003 and stats.count_at_lower_bound == 1000
    assert not stats.spilled  # three stored values: nothing to spill
    np.testing.assert_array_equal(stats.values_at([0, 999, 1000, 1002]), [0, 0, 1, 3])
    with pytest.raises(ValueError, match="below the lower bound"):
        stats.add(np.array([-1.0]))


def test_ecdf_table_of_a_spilled_column_is_the_in_memory_one():
    rng = np.random.default_rng(3)
    x = np.round(rng.lognormal(2.0, 1.0, 20_000), 1)
    small, big = OrderStatistics(run_values=500), OrderStatistics()
    for part in np.array_split(x, 9):
        small.add(part)
        big.add(part)
    assert small.spilled and not big.spilled
    np.testing.assert_array_equal(small.ecdf_table(1000), big.ecdf_table(1000))
    # ranks ceil(k n / points): the 1000th point is the largest value
    assert small.ecdf_table(1000)[-1] == x.max()


def test_ranks_outside_the_column_are_refused():
    stats = OrderStatistics()
    stats.add(np.array([1.0, 2.0]))
    with pytest.raises(IndexError):
        stats.values_at([2])


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 3000),
       scale=st.sampled_from([1e-3, 1.0, 1e9, 1e16]))
def test_exact_sum_is_fsum_of_every_value_whatever_the_chunks(seed, n, scale):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, n) * scale + rng.integers(-3, 4, n) * scale * 1e8
    total = ExactSum()
    for part in _chunks(x, rng):
        total.add(part)
    assert total.value == math.fsum(x.tolist())


def test_exact_sum_keeps_what_a_float_sum_loses():
    # 1e16 + 1 + ... + 1 - 1e16: a running float sum loses every 1
    total = ExactSum()
    total.add(np.array([1e16]))
    for _ in range(10):
        total.add(np.ones(3))
    total.add(np.array([-1e16]))
    assert total.value == 30.0


@given(st.integers(0, 2**32 - 1), st.integers(0, 400))
@settings(max_examples=60, deadline=None)
def test_exact_sum_of_mostly_zeros_is_fsum_bit_for_bit(seed, n):
    # Zeros (and negative zeros) are dropped before summing: the sum, its sign included,
    # must stay math.fsum's of every value.
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(n) < 0.7, rng.choice([0.0, -0.0], n),
                 rng.normal(0.0, 1.0, n) * 10.0 ** rng.integers(-8, 9, n))
    total = ExactSum()
    for part in _chunks(x, rng):
        total.add(part)
    want = math.fsum(x.tolist())
    assert total.value == want and math.copysign(1.0, total.value) == math.copysign(1.0, want)
