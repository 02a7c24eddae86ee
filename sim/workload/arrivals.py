"""Draws of the open-loop arrival processes specified in :mod:`sim.config.arrivals`.

:func:`arrival_times` draws one realisation of a process's arrival instants: seconds
since simulation start, sorted, in ``[0, duration_s)``.

The Poisson-type processes are drawn by time transformation. Their rate is piecewise
linear in time (piecewise constant for most), so the cumulative intensity Λ(t) is
piecewise quadratic with a closed-form inverse: draw ``N ~ Poisson(Λ(T))``, draw ``N``
sorted uniform points on ``[0, Λ(T))`` and map them back through Λ⁻¹. That is exact,
vectorised and needs no sort. The smooth daily curve is drawn by thinning.
"""

from __future__ import annotations

import math

import numpy as np

from ..config.arrivals import (
    ArrivalProcess,
    BlockSync,
    ConstantRate,
    DailyProfile,
    OnOff,
    RateProfile,
    checked_duration,
)


def arrival_times(
    spec: ArrivalProcess, rng: np.random.Generator, duration_s: float, day_offset_s: float = 0.0
) -> np.ndarray:
    """Sorted float64 arrival times in seconds, all in ``[0, duration_s)``.

    ``day_offset_s`` is the UTC time of day (seconds after 00:00) at simulation time 0;
    only :class:`~sim.config.arrivals.DailyProfile` depends on it.
    """
    duration_s = checked_duration(duration_s)
    if duration_s == 0:
        return np.empty(0)
    day_offset_s = float(day_offset_s)
    if isinstance(spec, ConstantRate):
        return (np.arange(spec.count_before(duration_s)) + spec.phase) / spec.rate
    if isinstance(spec, OnOff):
        return _onoff(spec, rng, duration_s)
    if isinstance(spec, BlockSync):
        return _block(spec, rng, duration_s)
    t = _nhpp(rng, spec.rate_profile(duration_s, day_offset_s), duration_s)
    if isinstance(spec, DailyProfile) and spec.hourly_weights is None:
        envelope = spec.rate_profile(duration_s, day_offset_s)
        bound = envelope.r0[np.searchsorted(envelope.knots[1:-1], t, side="right")]
        t = t[rng.random(t.size) * bound < spec.curve(t, day_offset_s)]
    return t


def _nhpp(rng: np.random.Generator, profile: RateProfile, duration_s: float) -> np.ndarray:
    """Sorted arrival times (s) of a Poisson process whose rate follows ``profile``."""
    seg = profile.integrals()
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    n = int(rng.poisson(cum[-1])) if cum[-1] > 0 else 0
    if n == 0:
        return np.empty(0)
    # Sorted uniforms on [0, Λ(T)) in O(n), no sort: the partial sums of n + 1 standard
    # exponentials, divided by their total, have the law of uniform order statistics.
    spacings = rng.standard_exponential(n + 1)
    np.cumsum(spacings, out=spacings)
    s = spacings[:-1]
    s *= cum[-1] / spacings[-1]
    i = 0
    if seg.size > 1:
        # side="right" skips zero-mass segments (zero rate or zero length) at a knot; the
        # cap covers an s rounded up to Λ(T) when trailing segments have zero mass.
        i = np.minimum(np.searchsorted(cum[1:-1], s, side="right"), np.flatnonzero(seg)[-1])
    s -= cum[i]
    lengths = np.diff(profile.knots)
    slope = np.divide(
        profile.r1 - profile.r0, lengths, out=np.zeros_like(lengths), where=lengths > 0
    )
    r0 = profile.r0[i]
    if not slope.any():
        x = s / r0
    else:
        # Root of r0*x + slope*x**2/2 = s, written without the cancellation of
        # (sqrt(r0**2 + 2*slope*s) - r0) / slope when the slope is small.
        root = np.sqrt(np.maximum(r0 * r0 + 2.0 * slope[i] * s, 0.0))
        x = 2.0 * s / np.maximum(r0 + root, np.finfo(float).tiny)
    t = profile.knots[i] + x
    # Rounding can reorder neighbours by an ulp at segment edges; restore the order.
    np.maximum.accumulate(t, out=t)
    return np.minimum(t, np.nextafter(duration_s, 0.0), out=t)


def _onoff(spec: OnOff, rng: np.random.Generator, duration_s: float) -> np.ndarray:
    """A two-state Markov-modulated Poisson process: the sojourns, then the arrivals."""
    on = rng.random() < spec.p_on if spec.start == "stationary" else spec.start == "on"
    first, second = spec.mean_on_s, spec.mean_off_s
    r_first, r_second = spec.rate_on, spec.rate_off
    if not on:
        first, second, r_first, r_second = second, first, r_second, r_first
    chunks, reached = [], 0.0
    while reached < duration_s:
        # Draw whole (first, second) pairs so the alternation carries over chunks.
        k = int(1.1 * (duration_s - reached) / (first + second)) + 8
        sojourns = rng.standard_exponential((k, 2)) * (first, second)
        chunks.append(reached + np.cumsum(sojourns.ravel()))
        reached = chunks[-1][-1]
    switches = np.concatenate(chunks)
    knots = np.concatenate(([0.0], switches[switches < duration_s], [duration_s]))
    rates = np.where(np.arange(knots.size - 1) % 2 == 0, r_first, r_second)
    return _nhpp(rng, RateProfile(knots, rates, rates), duration_s)


def _block(spec: BlockSync, rng: np.random.Generator, duration_s: float) -> np.ndarray:
    """Block-synchronous bursts: slots, skipped slots, per-slot counts, jitter."""
    starts, _ = spec.slots(duration_s)
    if spec.miss_probability > 0:
        starts = starts[rng.random(starts.size) >= spec.miss_probability]
    whole = math.floor(spec.per_block)
    frac = spec.per_block - whole
    if frac > 0:
        t = np.repeat(starts, whole + (rng.random(starts.size) < frac))
    else:
        t = np.repeat(starts, int(whole))
    if spec.jitter_s > 0:
        t += spec.jitter_s * rng.random(t.size)
        t = t[(t >= 0) & (t < duration_s)]
        t.sort()
    return t
