"""Arrival processes against theory: counts, variances, shapes, validation, properties.

Statistical checks use fixed seeds, so they are reproducible; what makes them meaningful
is that every tolerance is a few standard errors, derived where it is used.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from sim.config.arrivals import (
    ARRIVAL_ADAPTER,
    BlockSync,
    ConstantRate,
    DailyProfile,
    OnOff,
    Poisson,
    Ramp,
    Spikes,
)
from sim.core.rng import stream
from sim.workload.arrivals import arrival_times

HOUR = 3600.0
DAY = 86400.0

# Two-sided normal tail beyond 4.5 standard errors is 7e-6 per check, so a correct
# formula essentially never fails, while one that is off by more than ~4.5 SE does.
Z = 4.5


def counts(spec, duration_s, reps, day_offset_s=0.0, seed=7):
    """Arrival counts of ``reps`` independent realisations (streams ``seed/test/i``)."""
    return np.array(
        [arrival_times(spec, stream(seed, "test", i), duration_s, day_offset_s).size
         for i in range(reps)],
        dtype=float,
    )


def assert_count_moments(spec, duration_s, day_offset_s=0.0, reps=2000):
    """Empirical mean and variance of the count match expected_count / count_variance.

    Over R independent runs, the sample mean has standard error sqrt(s²/R) (CLT) and the
    sample variance s² has standard error sqrt((m4 - s⁴)/R) asymptotically, with the
    fourth central moment m4 estimated from the same sample, so no normality of the
    counts is assumed. With R = 2000 the variance is pinned to within ~4.5·sqrt(2/R) ≈
    14 % for near-normal counts: enough to catch a wrong variance formula, e.g. a missing
    cross term or a factor 2 on the modulation term.
    """
    c = counts(spec, duration_s, reps, day_offset_s)
    mean = spec.expected_count(duration_s, day_offset_s)
    var = spec.count_variance(duration_s, day_offset_s)
    s2 = c.var(ddof=1)
    assert abs(c.mean() - mean) <= Z * math.sqrt(s2 / reps), (c.mean(), mean)
    m4 = np.mean((c - c.mean()) ** 4)
    assert abs(s2 - var) <= Z * math.sqrt(max(m4 - s2 * s2, 0.0) / reps), (s2, var)
    return c


ON_OFF = dict(rate_on=20.0, rate_off=2.0, mean_on_s=5.0, mean_off_s=15.0)

STOCHASTIC_CASES = [
    (Poisson(rate=5.0), 60.0, 0.0),
    (OnOff(**ON_OFF), 120.0, 0.0),
    (OnOff(**ON_OFF, start="on"), 30.0, 0.0),
    (OnOff(**ON_OFF, start="off"), 30.0, 0.0),
    (OnOff(rate_on=30.0, mean_on_s=2.0, mean_off_s=8.0), 200.0, 0.0),
    # Sojourns far longer than the run: the count is decided by the stationary start.
    (OnOff(rate_on=50.0, mean_on_s=100.0, mean_off_s=300.0), 2.0, 0.0),
    (
        DailyProfile(rate=0.05, hourly_weights=[h % 7 + 0.5 for h in range(24)]),
        26_100.0,
        5.5 * HOUR,
    ),
    (DailyProfile(rate=0.05, peak_hour=15.0, amplitude=0.8), 10 * HOUR, 3 * HOUR),
    (BlockSync(per_block=3, miss_probability=0.3), 120.0, 0.0),
    (BlockSync(per_block=4, jitter_s=5.0, offset_s=-3.0, miss_probability=0.2), 125.0, 0.0),
    (BlockSync(per_block=2, jitter_s=30.0, offset_s=4.0), 100.0, 0.0),
    (Ramp(start_rate=1.0, end_rate=10.0, ramp_start_s=20.0, ramp_end_s=80.0), 100.0, 0.0),
    (Ramp(start_rate=10.0, end_rate=0.0, ramp_end_s=100.0), 60.0, 0.0),
    (
        Spikes(base_rate=2.0, spike_rate=20.0, spike_duration_s=5.0, at_s=[40, 10, 12, 98]),
        100.0,
        0.0,
    ),
]


@pytest.mark.parametrize(
    ("spec", "duration_s", "day_offset_s"),
    STOCHASTIC_CASES,
    ids=[f"{c[0].process}-{i}" for i, c in enumerate(STOCHASTIC_CASES)],
)
def test_count_mean_and_variance_match_theory(spec, duration_s, day_offset_s):
    assert_count_moments(spec, duration_s, day_offset_s)


@pytest.mark.parametrize(
    ("spec", "duration_s", "expected"),
    [
        (ConstantRate(rate=5.0), 100.0, 500),
        (ConstantRate(rate=5.0, phase=0.5), 100.0, 500),  # (k + 0.5)/5 < 100 for k <= 499
        (ConstantRate(rate=3.0, phase=0.9), 1.0, 3),  # 0.3, 0.633.., 0.966..
        (ConstantRate(rate=0.0), 100.0, 0),
        (BlockSync(per_block=3), 120.0, 30),  # slots at 0, 12, ..., 108
        (BlockSync(per_block=3, offset_s=3.0), 120.0, 30),  # 3, 15, ..., 111
        (BlockSync(per_block=3, offset_s=-2.0), 120.0, 30),  # 10, 22, ..., 118
        (BlockSync(per_block=3, offset_s=-2.0), 118.0, 27),  # 118 falls outside
        (BlockSync(per_block=5, slot_s=1.0), 0.5, 5),
    ],
)
def test_deterministic_counts_are_exact(spec, duration_s, expected):
    assert spec.expected_count(duration_s) == expected
    assert spec.count_variance(duration_s) == 0.0
    for i in range(3):
        assert arrival_times(spec, stream(1, "test", i), duration_s).size == expected


def test_constant_rate_times_are_the_grid():
    np.testing.assert_allclose(
        arrival_times(ConstantRate(rate=5.0), stream(0, "test"), 100.0), np.arange(500) / 5.0
    )
    t = arrival_times(ConstantRate(rate=5.0, phase=0.5), stream(0, "test"), 100.0)
    assert t[0] == pytest.approx(0.1) and t[-1] == pytest.approx(99.9)


def test_block_arrivals_sit_on_multiples_of_twelve():
    t = arrival_times(BlockSync(per_block=3), stream(0, "test"), 120.0)
    np.testing.assert_array_equal(t, np.repeat(np.arange(0.0, 120.0, 12.0), 3))


@pytest.mark.parametrize(("offset_s", "residue"), [(3.0, 3.0), (-2.0, 10.0), (0.0, 0.0)])
def test_block_offset_shifts_arrivals_against_the_window(offset_s, residue):
    t = arrival_times(BlockSync(per_block=2, offset_s=offset_s), stream(0, "test"), 600.0)
    np.testing.assert_allclose(np.mod(t, 12.0), residue, atol=1e-9)
    assert t[0] == pytest.approx(residue)


def test_block_jitter_stays_within_the_jitter_span():
    spec = BlockSync(per_block=50, offset_s=2.0, jitter_s=4.0)
    t = arrival_times(spec, stream(0, "test"), 1200.0)
    lag = np.mod(t - 2.0, 12.0)
    assert lag.max() < 4.0
    # Uniform lag on [0, 4): mean 2 with standard error (4/sqrt(12))/sqrt(5000) ≈ 0.016.
    assert abs(lag.mean() - 2.0) < Z * (4.0 / math.sqrt(12)) / math.sqrt(t.size)


def test_block_misses_are_binomial_by_hand():
    # 10 slots of 3 requests, each slot kept with probability 0.75:
    # mean 3 * 10 * 0.75 = 22.5, variance 3² * 10 * 0.25 * 0.75 = 16.875.
    spec = BlockSync(per_block=3, miss_probability=0.25)
    assert spec.expected_count(120.0) == pytest.approx(22.5)
    assert spec.count_variance(120.0) == pytest.approx(16.875)
    c = assert_count_moments(spec, 120.0)
    assert np.all(c % 3 == 0)


def test_block_jitter_expected_count_by_hand():
    # Slots at -3, 9, ..., 117, jitter 5, window [0, 20): slot -3 lands inside 2/5 of the
    # time, slot 9 always, slot 21 never; slot 9's jitter [9, 14) is inside.
    spec = BlockSync(per_block=5, offset_s=-3.0, jitter_s=5.0)
    assert spec.expected_count(20.0) == pytest.approx(5 * (0.4 + 1.0))
    # Window [0, 11): slot 9 lands inside with probability 2/5.
    assert spec.expected_count(11.0) == pytest.approx(5 * (0.4 + 0.4))
    # Each slot is Binomial(5, q): variance 5 q (1 - q) summed over the two partial slots.
    assert spec.count_variance(11.0) == pytest.approx(2 * 5 * 0.4 * 0.6)


def test_poisson_mean_and_interarrival_cv():
    t = arrival_times(Poisson(rate=100.0), stream(3, "test"), 1000.0)
    gaps = np.diff(t)
    # ~1e5 exponential gaps: the mean gap has relative SE 1/sqrt(n) ≈ 0.3 %, and the sample
    # CV of exponential data has SE ≈ 1/sqrt(n) as well (delta method), i.e. ~0.003.
    n = gaps.size
    assert abs(gaps.mean() * 100.0 - 1.0) < Z / math.sqrt(n)
    assert abs(gaps.std() / gaps.mean() - 1.0) < Z / math.sqrt(n)
    assert Poisson(rate=100.0).expected_count(1000.0) == 100_000.0


def test_onoff_interrupted_is_overdispersed():
    spec = OnOff(rate_on=30.0, mean_on_s=2.0, mean_off_s=8.0)
    # Stationary mean: on 2/(2+8) of the time at 30/s -> 6/s, 1200 over 200 s.
    assert spec.expected_count(200.0) == pytest.approx(1200.0)
    assert spec.mean_rate == pytest.approx(6.0)
    c = counts(spec, 200.0, 400)
    # A Poisson count would give var/mean ≈ 1 (SE ≈ sqrt(2/400) ≈ 0.07); theory below
    # says ≈ 44, so even a loose bound of 2 separates the two by a wide margin.
    assert c.var(ddof=1) / c.mean() > 2.0


def test_onoff_long_run_dispersion_matches_ipp_literature():
    # For an interrupted Poisson process with on-rate λ, on->off rate α and off->on rate β
    # the index of dispersion tends to 1 + 2λα/(α+β)² (Kuczura 1973; Fischer & Meier-
    # Hellstern 1993), and the count variance grows linearly.
    lam, mean_on, mean_off = 30.0, 2.0, 8.0
    alpha, beta = 1 / mean_on, 1 / mean_off
    spec = OnOff(rate_on=lam, mean_on_s=mean_on, mean_off_s=mean_off)
    T = 1e7
    idc = spec.count_variance(T) / spec.expected_count(T)
    assert idc == pytest.approx(1 + 2 * lam * alpha / (alpha + beta) ** 2, rel=1e-5)


def test_onoff_short_horizon_from_a_known_state():
    # Switching rate a = 1e-4 /s, horizon T = 1 s: to first order in a the state flips at
    # most once, at an Exp(a) time τ. Starting on, the lost on-time L = (T - τ)+ has
    # E[L] ≈ aT²/2 and E[L²] ≈ aT³/3, so E N ≈ r_on T - Δ aT²/2 and
    # Var N ≈ E N + Δ² aT³/3 with Δ = r_on - r_off (and mirrored when starting off).
    # Second-order terms are ~ a²Δ² ≈ 2e-5, well inside the 1e-3 tolerance, while the
    # first-order terms are 2e-3 and 0.07, so a wrong transient term would show.
    a, r_on, r_off = 1e-4, 50.0, 5.0
    delta = r_on - r_off
    spec = dict(rate_on=r_on, rate_off=r_off, mean_on_s=1 / a, mean_off_s=1 / a)
    on, off = OnOff(**spec, start="on"), OnOff(**spec, start="off")
    assert on.expected_count(1.0) == pytest.approx(r_on - delta * a / 2, abs=1e-6)
    assert off.expected_count(1.0) == pytest.approx(r_off + delta * a / 2, abs=1e-6)
    assert on.count_variance(1.0) == pytest.approx(
        on.expected_count(1.0) + delta**2 * a / 3, abs=1e-3
    )
    assert off.count_variance(1.0) == pytest.approx(
        off.expected_count(1.0) + delta**2 * a / 3, abs=1e-3
    )


@pytest.mark.parametrize("duration_s", [0.1, 3.0, 30.0, 300.0])
def test_onoff_stationary_is_the_mixture_of_known_starts(duration_s):
    # Laws of total expectation and variance over the initial state: these tie the
    # transient (start on/off) formulas to the classical stationary one.
    on, off, stat = (OnOff(**ON_OFF, start=s) for s in ("on", "off", "stationary"))
    p = stat.p_on
    e_on, e_off = on.expected_count(duration_s), off.expected_count(duration_s)
    assert stat.expected_count(duration_s) == pytest.approx(p * e_on + (1 - p) * e_off)
    mix_var = (
        p * on.count_variance(duration_s)
        + (1 - p) * off.count_variance(duration_s)
        + p * (1 - p) * (e_on - e_off) ** 2
    )
    assert stat.count_variance(duration_s) == pytest.approx(mix_var)


WEIGHTS = [h + 1.0 for h in range(24)]  # sum 300


@pytest.mark.parametrize("day_offset_s", [0.0, 5.5 * HOUR, -7 * HOUR])
def test_daily_hourly_weights_put_the_right_share_in_each_hour(day_offset_s):
    spec = DailyProfile(rate=1.0, hourly_weights=WEIGHTS)
    duration = 5 * DAY
    assert spec.expected_count(duration, day_offset_s) == pytest.approx(5 * DAY)
    t = arrival_times(spec, stream(11, "test"), duration, day_offset_s)
    hour = np.floor(np.mod(t + day_offset_s, DAY) / HOUR).astype(int)
    share = np.bincount(hour, minlength=24) / t.size
    expected = np.array(WEIGHTS) / 300.0
    # Each hour's share is a binomial proportion with SE sqrt(p(1-p)/n), n ≈ 432 000.
    se = np.sqrt(expected * (1 - expected) / t.size)
    assert np.all(np.abs(share - expected) <= Z * se)


def test_daily_hourly_expected_count_by_hand():
    spec = DailyProfile(rate=2.0, hourly_weights=WEIGHTS)
    scale = 24 / 300  # weights are rescaled to mean 1
    for h in (0, 7, 23):
        assert spec.expected_count(HOUR, h * HOUR) == pytest.approx(2.0 * HOUR * WEIGHTS[h] * scale)
    # 45 min of hour 23 then 15 min of hour 0 of the next day.
    got = spec.expected_count(HOUR, 23.25 * HOUR)
    assert got == pytest.approx(2.0 * scale * (2700 * WEIGHTS[23] + 900 * WEIGHTS[0]))


@pytest.mark.parametrize("day_offset_s", [0.0, 12_345.0, -3 * HOUR])
def test_daily_curve_integrates_to_the_daily_mean(day_offset_s):
    spec = DailyProfile(rate=3.0, peak_hour=14.0, amplitude=0.7)
    # The cosine integrates to zero over any whole day.
    assert spec.expected_count(DAY, day_offset_s) == pytest.approx(3.0 * DAY)
    assert spec.expected_count(4 * DAY, day_offset_s) == pytest.approx(12.0 * DAY)


def test_daily_curve_half_day_around_the_peak():
    # Mean of cos over ±6 h around the peak: (1/12 h) ∫_{-6}^{6} cos(2πh/24) dh = 2/π.
    spec = DailyProfile(rate=0.1, peak_hour=14.0, amplitude=0.6)
    expected = 0.1 * DAY / 2 * (1 + 0.6 * 2 / math.pi)
    assert spec.expected_count(DAY / 2, 8 * HOUR) == pytest.approx(expected)
    # And the trough half-day gets the complement.
    assert spec.expected_count(DAY / 2, 20 * HOUR) == pytest.approx(0.1 * DAY - expected)
    assert_count_moments(spec, DAY / 2, 8 * HOUR, reps=600)


@pytest.mark.parametrize(("peak_hour", "day_offset_s"), [(14.0, 0.0), (0.1, 1234.5), (23.99, -5.0)])
def test_daily_curve_thinning_envelope_bounds_the_curve(peak_hour, day_offset_s):
    # Thinning is exact only if the envelope is never below the curve (white-box check).
    spec = DailyProfile(rate=2.0, peak_hour=peak_hour, amplitude=1.0)
    envelope = spec.rate_profile(2 * DAY, day_offset_s)
    t = np.linspace(0.0, 2 * DAY, 1_000_001)[:-1]
    bound = envelope.r0[np.searchsorted(envelope.knots[1:-1], t, side="right")]
    hours = np.mod(t + day_offset_s, DAY) / HOUR
    curve = 2.0 * (1 + np.cos(2 * np.pi * (hours - peak_hour) / 24))
    assert np.all(bound >= curve - 1e-12)


def test_daily_curve_peaks_at_peak_hour():
    spec = DailyProfile(rate=1.0, peak_hour=14.0, amplitude=1.0)
    t = arrival_times(spec, stream(5, "test"), 2 * DAY, 1800.0)
    hour = np.floor(np.mod(t + 1800.0, DAY) / HOUR).astype(int)
    by_hour = np.bincount(hour, minlength=24)
    assert by_hour.argmax() in (13, 14)  # the curve is symmetric about 14:00
    assert by_hour.argmin() in (1, 2)  # and bottoms out at 02:00
    # Rate(h) = 1 + cos(2π(h - 14)/24): the hour 13-14 gets ∫ ≈ 1.989 h of rate·s, so
    # its share of 2·86400 arrivals is 1.989·3600/86400 ≈ 0.0829 (binomial SE ≈ 0.0007).
    lo, hi = 2 * np.pi * (np.array([13.0, 14.0]) - 14) / 24
    share = (1 + (np.sin(hi) - np.sin(lo)) * 24 / (2 * np.pi)) * HOUR / DAY
    assert abs(by_hour[13] / t.size - share) < Z * math.sqrt(share / t.size)


def test_ramp_expected_counts_by_hand():
    ramp = Ramp(start_rate=1.0, end_rate=10.0, ramp_start_s=20.0, ramp_end_s=80.0)
    assert ramp.expected_count(100.0) == pytest.approx(20 * 1 + 60 * 5.5 + 20 * 10)
    assert ramp.expected_count(50.0) == pytest.approx(20 * 1 + 30 * (1 + 5.5) / 2)
    assert ramp.expected_count(10.0) == pytest.approx(10.0)
    assert Ramp(start_rate=0.0, end_rate=10.0, ramp_end_s=100.0).expected_count(100.0) == 500.0


def test_ramp_from_zero_has_quadratic_cdf():
    # Rate ∝ t on [0, 100): the arrival-time CDF is (t/100)², so 1/4 fall before t = 50.
    spec = Ramp(start_rate=0.0, end_rate=200.0, ramp_end_s=100.0)
    t = arrival_times(spec, stream(2, "test"), 100.0)
    for x in (25.0, 50.0, 90.0):
        p = (x / 100) ** 2
        assert abs(np.mean(t < x) - p) < Z * math.sqrt(p * (1 - p) / t.size)


def test_spikes_replace_the_rate_and_merge():
    base = dict(base_rate=1.0, spike_rate=11.0, spike_duration_s=5.0)
    assert Spikes(**base, at_s=[10, 50]).expected_count(100.0) == pytest.approx(100 + 2 * 5 * 10)
    # [10, 15) ∪ [12, 17) = [10, 17): 7 s at 11/s, not 3 s at 21/s.
    assert Spikes(**base, at_s=[12, 10]).expected_count(100.0) == pytest.approx(93 + 77)
    # Only [98, 100) of the last spike is inside the window.
    assert Spikes(**base, at_s=[98]).expected_count(100.0) == pytest.approx(98 + 22)
    assert Spikes(**base).expected_count(100.0) == pytest.approx(100.0)


_rate = st.floats(0, 500, allow_nan=False)
_time = st.floats(0, 400, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(start=_rate, end=_rate, a=_time, span=st.floats(0.5, 400), duration_s=_time)
def test_ramp_mean_is_its_rate_profiles_integral(start, end, a, span, duration_s):
    # expected_count is plain Python (`capsim validate` loads no numpy); the draws follow
    # rate_profile, so the two must integrate the same rate.
    spec = Ramp(start_rate=start, end_rate=end, ramp_start_s=a, ramp_end_s=a + span)
    profile = spec.rate_profile(duration_s, 0.0).integrals().sum()
    assert spec.expected_count(duration_s) == pytest.approx(profile, rel=1e-12, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(base=_rate, spike=_rate, width=st.floats(0.5, 60), at=st.lists(_time, max_size=6),
       duration_s=_time)
def test_spikes_mean_is_its_rate_profiles_integral(base, spike, width, at, duration_s):
    spec = Spikes(base_rate=base, spike_rate=spike, spike_duration_s=width, at_s=at)
    profile = spec.rate_profile(duration_s, 0.0).integrals().sum()
    assert spec.expected_count(duration_s) == pytest.approx(profile, rel=1e-12, abs=1e-9)


def test_spikes_chained_overlaps_merge_into_one():
    # [0, 5) ∪ [4, 9) ∪ [8, 13) = [0, 13), and a spike at 200 lies past the window.
    spec = Spikes(base_rate=1.0, spike_rate=3.0, spike_duration_s=5.0, at_s=[8, 0, 4, 200])
    assert spec.expected_count(100.0) == pytest.approx(87 * 1 + 13 * 3)


def test_spike_arrivals_fall_in_the_spike():
    spec = Spikes(base_rate=1.0, spike_rate=101.0, spike_duration_s=10.0, at_s=[30])
    t = arrival_times(spec, stream(4, "test"), 100.0)
    inside = np.mean((t >= 30) & (t < 40))
    p = 1010 / (90 + 1010)
    assert abs(inside - p) < Z * math.sqrt(p * (1 - p) / t.size)


def test_mean_rate_is_the_long_run_rate():
    assert Poisson(rate=2.5).mean_rate == 2.5
    assert BlockSync(per_block=6, miss_probability=0.5).mean_rate == pytest.approx(0.25)
    assert DailyProfile(rate=4.0, peak_hour=3.0, amplitude=1.0).mean_rate == 4.0
    assert OnOff(rate_on=10, rate_off=1, mean_on_s=1, mean_off_s=3).mean_rate == pytest.approx(3.25)


def test_same_stream_same_times():
    spec = OnOff(**ON_OFF)
    a = arrival_times(spec, stream(9, "test", "a"), 500.0)
    b = arrival_times(spec, stream(9, "test", "a"), 500.0)
    c = arrival_times(spec, stream(9, "test", "b"), 500.0)
    np.testing.assert_array_equal(a, b)
    assert a.size != c.size or not np.array_equal(a, c)


def test_zero_and_bad_durations():
    for spec, _, _ in STOCHASTIC_CASES:
        assert arrival_times(spec, stream(0, "test"), 0.0).size == 0
        assert spec.expected_count(0.0) == 0.0
    with pytest.raises(ValueError, match="duration_s"):
        arrival_times(Poisson(rate=1.0), stream(0, "test"), -1.0)
    with pytest.raises(ValueError, match="duration_s"):
        Poisson(rate=1.0).expected_count(float("nan"))


@pytest.mark.parametrize(
    "data",
    [
        {"process": "poisson", "rate": -1.0},
        {"process": "poisson", "rate": float("inf")},
        {"process": "constant", "rate": 1.0, "phase": 1.0},
        {"process": "onoff", "rate_on": 1.0, "mean_on_s": 0.0, "mean_off_s": 1.0},
        {"process": "onoff", "rate_on": 1.0, "mean_on_s": 1.0, "mean_off_s": 1.0, "start": "up"},
        {"process": "daily", "rate": 1.0},
        {"process": "daily", "rate": 1.0, "hourly_weights": [1.0] * 24, "peak_hour": 3.0},
        {"process": "daily", "rate": 1.0, "hourly_weights": [1.0] * 23},
        {"process": "daily", "rate": 1.0, "hourly_weights": [0.0] * 24},
        {"process": "daily", "rate": 1.0, "hourly_weights": [-1.0] + [1.0] * 23},
        {"process": "daily", "rate": 1.0, "peak_hour": 3.0},
        {"process": "daily", "rate": 1.0, "peak_hour": 3.0, "amplitude": 1.5},
        {"process": "daily", "rate": 1.0, "peak_hour": 25.0, "amplitude": 0.5},
        {"process": "block", "per_block": 0},
        {"process": "block", "per_block": 1, "offset_s": -13.0},
        {"process": "block", "per_block": 1, "miss_probability": 1.1},
        {"process": "block", "per_block": 1, "jitter_s": -1.0},
        {"process": "ramp", "start_rate": 1, "end_rate": 2, "ramp_start_s": 5, "ramp_end_s": 5},
        {"process": "spikes", "base_rate": 1, "spike_rate": 2, "spike_duration_s": 0},
        {"process": "spikes", "base_rate": 1, "spike_rate": 2, "spike_duration_s": 1, "at_s": [-1]},
        {"process": "poisson", "rate": 1.0, "burst": 3},
        {"process": "gamma", "rate": 1.0},
        {"rate": 1.0},
    ],
)
def test_invalid_specs_are_rejected(data):
    with pytest.raises(ValidationError):
        ARRIVAL_ADAPTER.validate_python(data)


def test_daily_shape_error_says_what_is_expected():
    with pytest.raises(ValidationError, match="exactly one daily shape"):
        DailyProfile(rate=1.0, hourly_weights=[1.0] * 24, peak_hour=3.0, amplitude=0.5)
    with pytest.raises(ValidationError, match="exactly one daily shape"):
        DailyProfile(rate=1.0)


def test_adapter_round_trips_and_models_are_frozen():
    for spec, _, _ in STOCHASTIC_CASES:
        assert ARRIVAL_ADAPTER.validate_python(spec.model_dump()) == spec
        assert ARRIVAL_ADAPTER.validate_json(spec.model_dump_json()) == spec
    parsed = ARRIVAL_ADAPTER.validate_python({"process": "block", "per_block": 2})
    assert parsed == BlockSync(per_block=2, slot_s=12.0)
    with pytest.raises(ValidationError):
        parsed.per_block = 3


# --- property: every valid process yields sorted times inside the window -------------

rates = st.floats(0.0, 40.0)


@st.composite
def blocks(draw):
    slot = draw(st.floats(0.5, 30.0))
    return BlockSync(
        per_block=draw(st.integers(1, 20)),
        slot_s=slot,
        offset_s=draw(st.floats(-1.0, 1.0)) * slot,
        jitter_s=draw(st.floats(0.0, 40.0)),
        miss_probability=draw(st.floats(0.0, 1.0)),
    )


@st.composite
def ramps(draw):
    start = draw(st.floats(0.0, 300.0))
    return Ramp(
        start_rate=draw(rates),
        end_rate=draw(rates),
        ramp_start_s=start,
        ramp_end_s=start + draw(st.floats(1e-3, 300.0)),
    )


processes = st.one_of(
    st.builds(Poisson, rate=rates),
    st.builds(ConstantRate, rate=rates, phase=st.floats(0.0, 1.0, exclude_max=True)),
    st.builds(
        OnOff,
        rate_on=rates,
        rate_off=rates,
        mean_on_s=st.floats(0.05, 500.0),
        mean_off_s=st.floats(0.05, 500.0),
        start=st.sampled_from(["on", "off", "stationary"]),
    ),
    st.builds(
        DailyProfile,
        rate=rates,
        hourly_weights=st.lists(st.floats(0.0, 10.0), min_size=24, max_size=24).filter(
            lambda w: sum(w) > 0
        ),
    ),
    st.builds(DailyProfile, rate=rates, peak_hour=st.floats(0.0, 24.0), amplitude=st.floats(0, 1)),
    blocks(),
    ramps(),
    st.builds(
        Spikes,
        base_rate=rates,
        spike_rate=rates,
        spike_duration_s=st.floats(1e-3, 100.0),
        at_s=st.lists(st.floats(0.0, 400.0), max_size=8),
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    spec=processes,
    duration_s=st.floats(0.0, 300.0),
    day_offset_s=st.floats(-2 * DAY, 2 * DAY),
    seed=st.integers(0, 2**32 - 1),
)
def test_times_are_sorted_and_inside_the_window(spec, duration_s, day_offset_s, seed):
    t = arrival_times(spec, stream(seed, "prop"), duration_s, day_offset_s)
    assert t.dtype == np.float64 and t.ndim == 1
    assert np.all(np.diff(t) >= 0)
    if t.size:
        assert t[0] >= 0.0 and t[-1] < duration_s
    mean = spec.expected_count(duration_s, day_offset_s)
    var = spec.count_variance(duration_s, day_offset_s)
    assert math.isfinite(mean) and mean >= 0
    assert var is None or (math.isfinite(var) and var >= 0)
