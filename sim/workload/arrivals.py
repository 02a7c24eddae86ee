"""Draws of the open-loop arrival processes specified in :mod:`sim.config.arrivals`.

An :class:`ArrivalStream` draws one realisation of a process's arrival instants (seconds
since simulation start, sorted, in ``[0, duration_s)``) in time order:
``until(t)`` returns the arrivals not yet returned that come before ``t``. The draws do
not depend on how the run is sliced: the stream draws internally in chunks of a fixed
size and only hands out what lies before ``t``, so slicing a run by 60 s or taking it
whole gives the same instants (``tests/unit/workload/test_demand_slices.py``), and
memory does not grow with the run's length. :func:`arrival_times` is the whole run at once.

The Poisson-type processes are drawn by time transformation: the points of a unit-rate
Poisson process (running sums of standard exponentials) are mapped back through the
inverse of the cumulative intensity Λ. Their rate is piecewise linear in time (piecewise
constant for most), so Λ is piecewise quadratic with a closed-form inverse. That is
exact, sequential and needs no sort. The smooth daily curve is drawn by thinning; the
on/off process draws its sojourns (a few per switch) up front, then its arrivals.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

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

#: Points drawn per internal chunk (Poisson-type) or slots per chunk (``block``).
CHUNK = 1 << 16


def arrival_times(
    spec: ArrivalProcess, rng: np.random.Generator, duration_s: float, day_offset_s: float = 0.0
) -> np.ndarray:
    """Sorted float64 arrival times in seconds, all in ``[0, duration_s)``: the whole run.

    ``day_offset_s`` is the UTC time of day (seconds after 00:00) at simulation time 0;
    only :class:`~sim.config.arrivals.DailyProfile` depends on it.
    """
    return ArrivalStream(spec, rng, duration_s, day_offset_s).until(math.inf)


def arrival_count(
    spec: ArrivalProcess, rng: np.random.Generator, duration_s: float, day_offset_s: float = 0.0
) -> int:
    """The number of arrivals :func:`arrival_times` would draw, counted chunk by chunk
    (memory of one chunk, not of the run)."""
    duration_s = checked_duration(duration_s)
    if duration_s == 0:
        return 0
    return sum(len(t) for t, _ in _chunks(spec, rng, duration_s, float(day_offset_s)))


class ArrivalStream:
    """One realisation of ``spec`` on ``[0, duration_s)``, handed out in time order.

    ``rng`` belongs to the stream from then on (its draws are the stream's alone).
    """

    def __init__(self, spec: ArrivalProcess, rng: np.random.Generator, duration_s: float,
                 day_offset_s: float = 0.0) -> None:
        duration_s = checked_duration(duration_s)
        self._chunks = (_chunks(spec, rng, duration_s, float(day_offset_s)) if duration_s > 0
                        else iter(()))
        self._pending = np.empty(0)
        self._mark = -math.inf  # every arrival not yet drawn comes at or after this time
        self._count = 0

    @property
    def count(self) -> int:
        """Arrivals handed out so far."""
        return self._count

    def until(self, t: float) -> np.ndarray:
        """The arrivals before ``t`` not yet handed out, sorted."""
        while self._mark < t:
            chunk = next(self._chunks, None)
            if chunk is None:
                self._mark = math.inf
                break
            times, self._mark = chunk
            if not len(self._pending):
                self._pending = times
            elif len(times):
                self._pending = np.concatenate((self._pending, times))
                if times[0] < self._pending[len(self._pending) - len(times) - 1]:
                    self._pending.sort(kind="stable")
        k = int(np.searchsorted(self._pending, t, side="left"))
        out, self._pending = self._pending[:k], self._pending[k:]
        self._count += k
        return out


def _chunks(spec, rng, duration_s: float, day_offset_s: float
            ) -> Iterator[tuple[np.ndarray, float]]:
    """``(sorted times, mark)`` pairs: every later time is at or after ``mark``."""
    if isinstance(spec, ConstantRate):
        yield from _constant(spec, duration_s)
    elif isinstance(spec, BlockSync):
        yield from _block(spec, rng, duration_s)
    elif isinstance(spec, OnOff):
        yield from _nhpp(rng, _onoff_profile(spec, rng, duration_s), duration_s)
    elif isinstance(spec, DailyProfile) and spec.hourly_weights is None:
        envelope = spec.rate_profile(duration_s, day_offset_s)
        inner = envelope.knots[1:-1]
        for t, mark in _nhpp(rng, envelope, duration_s):
            bound = envelope.r0[np.searchsorted(inner, t, side="right")]
            yield t[rng.random(t.size) * bound < spec.curve(t, day_offset_s)], mark
    else:
        yield from _nhpp(rng, spec.rate_profile(duration_s, day_offset_s), duration_s)


def _constant(spec: ConstantRate, duration_s: float) -> Iterator[tuple[np.ndarray, float]]:
    """Deterministic arrivals ``(k + phase) / rate``, ``CHUNK`` at a time."""
    n = spec.count_before(duration_s)
    for k in range(0, n, CHUNK):
        t = (np.arange(k, min(n, k + CHUNK)) + spec.phase) / spec.rate
        yield t, t[-1]


def _nhpp(rng: np.random.Generator, profile: RateProfile, duration_s: float
          ) -> Iterator[tuple[np.ndarray, float]]:
    """A Poisson process whose rate follows ``profile``, ``CHUNK`` points at a time."""
    seg = profile.integrals()
    cum = np.concatenate(([0.0], np.cumsum(seg)))
    total = cum[-1]
    if not total > 0:
        return
    lengths = np.diff(profile.knots)
    slope = np.divide(profile.r1 - profile.r0, lengths, out=np.zeros_like(lengths),
                      where=lengths > 0)
    linear = slope.any()
    last_seg = np.flatnonzero(seg)[-1]
    top = np.nextafter(duration_s, 0.0)
    carry = np.zeros(1)  # the last unit-rate point (Λ) and the last time
    last_t = 0.0
    # A short run draws a short chunk: the size depends on the process, never on slicing.
    size = int(min(CHUNK, total + 4.0 * math.sqrt(total) + 16))
    while True:
        # Running sums started from the carried point: the same additions in the same
        # order as one long cumsum, whatever the chunking.
        carry_and_draws = np.concatenate((carry, rng.standard_exponential(size)))
        s = np.cumsum(carry_and_draws)[1:]
        carry = s[-1:]
        done = s[-1] >= total
        if done:
            s = s[: np.searchsorted(s, total, side="left")]
        i = 0
        if seg.size > 1:
            # side="right" skips zero-mass segments (zero rate or zero length) at a knot;
            # the cap covers an s rounded up to Λ(T) when trailing segments have no mass.
            i = np.minimum(np.searchsorted(cum[1:-1], s, side="right"), last_seg)
        s = s - cum[i]
        r0 = profile.r0[i]
        if not linear:
            x = s / r0
        else:
            # Root of r0*x + slope*x**2/2 = s, written without the cancellation of
            # (sqrt(r0**2 + 2*slope*s) - r0) / slope when the slope is small.
            root = np.sqrt(np.maximum(r0 * r0 + 2.0 * slope[i] * s, 0.0))
            x = 2.0 * s / np.maximum(r0 + root, np.finfo(float).tiny)
        t = profile.knots[i] + x
        # Rounding can reorder neighbours by an ulp at segment edges; restore the order.
        if t.size:
            t[0] = max(t[0], last_t)
            np.maximum.accumulate(t, out=t)
            np.minimum(t, top, out=t)
            last_t = t[-1]
        if done:
            yield t, math.inf
            return
        yield t, last_t


def _onoff_profile(spec: OnOff, rng: np.random.Generator, duration_s: float) -> RateProfile:
    """The on/off process's rate: its state at time 0 and its sojourns, drawn up front."""
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
    return RateProfile(knots, rates, rates)


def _block(spec: BlockSync, rng: np.random.Generator, duration_s: float
           ) -> Iterator[tuple[np.ndarray, float]]:
    """Block-synchronous bursts, ``CHUNK`` slots at a time: skipped slots, per-slot
    counts (stochastic rounding of a fractional ``per_block``), jitter."""
    k_lo = math.floor(-(spec.offset_s + spec.jitter_s) / spec.slot_s)
    k_hi = math.ceil((duration_s - spec.offset_s) / spec.slot_s)
    whole = math.floor(spec.per_block)
    frac = spec.per_block - whole
    for k in range(k_lo, k_hi + 1, CHUNK):
        starts = spec.offset_s + spec.slot_s * np.arange(k, min(k_hi + 1, k + CHUNK))
        mark = spec.offset_s + spec.slot_s * (k + CHUNK)  # the next chunk's first start
        # The slots that can reach [0, duration_s) (see BlockSync.slots).
        if spec.jitter_s == 0:
            starts = starts[(starts >= 0) & (starts < duration_s)]
        else:
            starts = starts[(starts < duration_s) & (starts + spec.jitter_s > 0)]
        if spec.miss_probability > 0:
            starts = starts[rng.random(starts.size) >= spec.miss_probability]
        if frac > 0:
            t = np.repeat(starts, whole + (rng.random(starts.size) < frac))
        else:
            t = np.repeat(starts, int(whole))
        if spec.jitter_s > 0:
            t += spec.jitter_s * rng.random(t.size)
            t = t[(t >= 0) & (t < duration_s)]
            t.sort()
        yield t, mark
