"""Synthetic open-loop arrival processes: the specifications and their theory.

Each process is a frozen pydantic model chosen by its ``process`` field.
``expected_count`` and ``count_variance`` give the closed-form mean and variance of the
number of arrivals in ``[0, duration_s)``, so that tests can hold every process against
theory; the Poisson-type processes expose their piecewise-linear ``rate_profile``. The
draws themselves (one realisation of the arrival instants) are
:mod:`sim.workload.arrivals`.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Annotated, Literal, NamedTuple

from pydantic import BaseModel, Field, TypeAdapter, model_validator

from ..core.vocabulary import DAY_S, HOUR_S
from .strict_types import STRICT_CONFIG, FiniteFloat, StrictInt

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

# numpy is imported where a rate profile is built, not with the models: `capsim validate`
# loads these specs and needs only the means, in plain Python for every process but a
# daily profile with hourly weights.

_NonNegative = Annotated[FiniteFloat, Field(ge=0)]
_Weights = Annotated[tuple[_NonNegative, ...], Field(min_length=24, max_length=24)]
HourlyWeights = _Weights  # 24 non-negative numbers, one per UTC hour (also replay's)


class RateProfile(NamedTuple):
    """A piecewise-linear rate: on ``[knots[i], knots[i+1])`` it runs from ``r0[i]`` to
    ``r1[i]`` arrivals per second."""

    knots: np.ndarray
    r0: np.ndarray
    r1: np.ndarray

    def integrals(self) -> np.ndarray:
        """Expected arrivals in each segment."""
        import numpy as np

        return 0.5 * (self.r0 + self.r1) * np.diff(self.knots)


def _clock_knots(duration_s: float, day_offset_s: float, step_s: float) -> np.ndarray:
    """0, each simulation time in ``(0, duration_s)`` where the UTC clock is a multiple of
    ``step_s``, and ``duration_s``."""
    import numpy as np

    c0 = day_offset_s % DAY_S
    k = np.arange(math.floor(c0 / step_s) + 1, math.ceil((c0 + duration_s) / step_s))
    inner = k * step_s - c0
    inner = inner[(inner > 0) & (inner < duration_s)]
    return np.concatenate(([0.0], inner, [duration_s]))


class _Arrivals(BaseModel):
    """Subclasses implement ``_mean`` and ``_variance`` for a duration > 0; the draws are
    :func:`sim.workload.arrivals.arrival_times`."""

    model_config = STRICT_CONFIG

    def expected_count(self, duration_s: float, day_offset_s: float = 0.0) -> float:
        """Exact mean number of arrivals in ``[0, duration_s)``."""
        return float(self._mean(checked_duration(duration_s), float(day_offset_s)))

    def count_variance(self, duration_s: float, day_offset_s: float = 0.0) -> float | None:
        """Exact variance of the number of arrivals in ``[0, duration_s)``."""
        return float(self._variance(checked_duration(duration_s), float(day_offset_s)))


def _unit(x: float) -> float:
    """``x`` clipped to ``[0, 1]``."""
    return min(max(x, 0.0), 1.0)


def checked_duration(duration_s: float) -> float:
    """``duration_s`` as a float; a ``ValueError`` unless finite and >= 0."""
    if not (math.isfinite(duration_s) and duration_s >= 0):
        raise ValueError(f"duration_s must be finite and >= 0, got {duration_s!r}")
    return float(duration_s)


class _PoissonLike(_Arrivals):
    """A Poisson process with a piecewise-linear rate ``rate_profile``: variance = mean."""

    def _mean(self, duration_s, day_offset_s):
        return self.rate_profile(duration_s, day_offset_s).integrals().sum()

    def _variance(self, duration_s, day_offset_s):
        return self._mean(duration_s, day_offset_s)


class Poisson(_PoissonLike):
    """Homogeneous Poisson arrivals at ``rate`` per second."""

    process: Literal["poisson"] = "poisson"
    rate: FiniteFloat = Field(ge=0)

    @property
    def mean_rate(self) -> float:
        """Arrivals per second."""
        return self.rate

    def rate_profile(self, duration_s, day_offset_s):
        import numpy as np

        return RateProfile(np.array([0.0, duration_s]), *[np.array([self.rate])] * 2)

    def _mean(self, duration_s, day_offset_s):
        return self.rate * duration_s  # its one-segment profile's integral, exactly


class ConstantRate(_Arrivals):
    """Deterministic arrivals at ``(k + phase) / rate`` seconds, ``k = 0, 1, 2, ...``; the
    count in ``[0, T)`` is exactly ``max(0, ceil(rate * T - phase))``."""

    process: Literal["constant"] = "constant"
    rate: FiniteFloat = Field(ge=0)
    phase: FiniteFloat = Field(default=0.0, ge=0, lt=1)

    @property
    def mean_rate(self) -> float:
        """Arrivals per second."""
        return self.rate

    def count_before(self, duration_s: float) -> int:
        if self.rate == 0 or duration_s == 0:
            return 0
        n = max(0, math.ceil(self.rate * duration_s - self.phase))
        # Rounding can put the estimate one off the rule "(k + phase) / rate < T"; apply it.
        n += (n + self.phase) / self.rate < duration_s
        return n - (n > 0 and (n - 1 + self.phase) / self.rate >= duration_s)

    def _mean(self, duration_s, day_offset_s):
        return self.count_before(duration_s)

    def _variance(self, duration_s, day_offset_s):
        return 0.0


class OnOff(_Arrivals):
    """Two-state Markov-modulated Poisson process (an interrupted Poisson process when
    ``rate_off`` is 0).

    Sojourns are exponential with means ``mean_on_s`` and ``mean_off_s`` seconds; arrivals
    come at ``rate_on`` or ``rate_off`` per second. ``start`` picks the state at time 0,
    ``"stationary"`` drawing it with the long-run probabilities. The count's mean and
    variance are exact for every start (see ``_on_time_moments``).
    """

    process: Literal["onoff"] = "onoff"
    rate_on: FiniteFloat = Field(ge=0)
    rate_off: FiniteFloat = Field(default=0.0, ge=0)
    mean_on_s: FiniteFloat = Field(gt=0)
    mean_off_s: FiniteFloat = Field(gt=0)
    start: Literal["on", "off", "stationary"] = "stationary"

    @property
    def p_on(self) -> float:
        """Long-run fraction of time in the on state."""
        return self.mean_on_s / (self.mean_on_s + self.mean_off_s)

    @property
    def mean_rate(self) -> float:
        """Long-run arrivals per second."""
        return self.p_on * self.rate_on + (1 - self.p_on) * self.rate_off

    def _on_time_moments(self, duration_s: float) -> tuple[float, float]:
        """Mean and variance of J, the time spent on during ``[0, duration_s)``.

        With g = 1/mean_on + 1/mean_off, P(on at t) = p_on + c·e^(-g t) where c is
        1 - p_on (start on), -p_on (start off) or 0 (stationary), and
        P(on at t | on at s) = p_on + (1 - p_on)·e^(-g (t - s)). Integrating
        E[J²] = 2 ∫∫_{s<t} P(on at s) P(on at t | on at s) gives the closed form below;
        for c = 0 it is the classical 2 p_on p_off (gT - 1 + e^(-gT)) / g².
        """
        T, p_on = duration_s, self.p_on
        p_off = 1.0 - p_on
        g = 1.0 / self.mean_on_s + 1.0 / self.mean_off_s
        c = {"on": p_off, "off": -p_on, "stationary": 0.0}[self.start]
        h = -math.expm1(-g * T) / g  # ∫_0^T e^(-g t) dt
        g2 = (T - h) / g  # ∫_0^T (1 - e^(-g t)) / g dt
        g4 = (-math.expm1(-g * T) - g * T * math.exp(-g * T)) / g**2  # ∫_0^T t e^(-g t) dt
        mean = min(max(p_on * T + c * h, 0.0), T)  # rounding can leave [0, T] for tiny T
        var = 2 * (p_on * p_off + c * p_on) * g2 + 2 * c * p_off * g4 - 2 * c * p_on * T * h
        return mean, max(var - c * c * h * h, 0.0)

    def _mean(self, duration_s, day_offset_s):
        on_mean, _ = self._on_time_moments(duration_s)
        return self.rate_off * duration_s + (self.rate_on - self.rate_off) * on_mean

    def _variance(self, duration_s, day_offset_s):
        # Var N = E[Λ] + Var[Λ] for the random integrated rate Λ = r_off T + (r_on - r_off) J.
        _, on_var = self._on_time_moments(duration_s)
        diff = self.rate_on - self.rate_off
        return self._mean(duration_s, day_offset_s) + diff * diff * on_var


class DailyProfile(_PoissonLike):
    """Poisson arrivals whose rate follows the simulated UTC time of day.

    ``rate`` is the mean over a whole day (per second). The shape is either
    ``hourly_weights`` (24 numbers, rescaled to mean 1, constant within each UTC hour) or
    the smooth curve ``rate * (1 + amplitude * cos(2π (h - peak_hour) / 24))`` of the UTC
    hour ``h``. The clock at simulation time ``t`` is ``(t + day_offset_s) mod 86400``.
    """

    process: Literal["daily"] = "daily"
    rate: FiniteFloat = Field(ge=0)
    hourly_weights: _Weights | None = None
    peak_hour: Annotated[FiniteFloat, Field(ge=0, le=24)] | None = None
    amplitude: Annotated[FiniteFloat, Field(ge=0, le=1)] | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> DailyProfile:
        weights, peak = self.hourly_weights is not None, self.peak_hour is not None
        if weights == peak or peak != (self.amplitude is not None):
            raise ValueError(
                "expected exactly one daily shape: hourly_weights (24 numbers), "
                "or peak_hour together with amplitude"
            )
        if weights and sum(self.hourly_weights) <= 0:
            raise ValueError("expected hourly_weights with at least one positive weight")
        return self

    @property
    def mean_rate(self) -> float:
        """Arrivals per second, averaged over a whole day."""
        return self.rate

    def curve(self, t: np.ndarray, day_offset_s: float) -> np.ndarray:
        """The smooth curve's rate (per second) at simulation times ``t``."""
        import numpy as np

        turns = (t + day_offset_s % DAY_S) / DAY_S - self.peak_hour / 24
        return self.rate * (1 + self.amplitude * np.cos(2 * np.pi * turns))

    def rate_profile(self, duration_s, day_offset_s):
        import numpy as np

        if self.hourly_weights is None:
            # Thinning envelope: the curve's maximum over each quarter hour of the clock
            # wastes ~2 % of candidates, a flat bound up to half. On a span shorter than a
            # day the curve is highest at an end unless the peak time lies inside.
            knots = _clock_knots(duration_s, day_offset_s, 900.0)
            to_peak = np.mod(self.peak_hour * HOUR_S - day_offset_s - knots[:-1], DAY_S)
            ends = self.curve(knots, day_offset_s)
            top = np.maximum(ends[:-1], ends[1:])
            rates = np.where(to_peak <= np.diff(knots), self.rate * (1 + self.amplitude), top)
            return RateProfile(knots, rates, rates)
        knots = _clock_knots(duration_s, day_offset_s, HOUR_S)
        # The midpoint decides the hour, so a knot's rounding cannot pick the wrong one.
        mid = 0.5 * (knots[:-1] + knots[1:]) + day_offset_s % DAY_S
        hour = (np.floor(mid / HOUR_S) % 24).astype(int)
        w = np.asarray(self.hourly_weights)
        rates = self.rate * (w * (24 / w.sum()))[hour]
        return RateProfile(knots, rates, rates)

    def _mean(self, duration_s, day_offset_s):
        if self.hourly_weights is not None:
            return super()._mean(duration_s, day_offset_s)
        w = 2 * math.pi / DAY_S
        p0 = w * (day_offset_s % DAY_S - self.peak_hour * HOUR_S)
        swing = math.sin(p0 + w * duration_s) - math.sin(p0)
        return self.rate * (duration_s + self.amplitude * swing / w)


class BlockSync(_Arrivals):
    """Bursts of ``per_block`` requests at slot starts ``offset_s + k * slot_s`` (every
    integer k; seconds), e.g. clients reacting to each 12-second block.

    Each request lands uniformly in ``[start, start + jitter_s)``; a whole slot is skipped
    with ``miss_probability`` p. Arrivals outside ``[0, duration_s)`` are dropped, so with
    jitter a slot starting before time 0 can still contribute. A slot whose requests each
    land inside with probability q adds ``B * Binomial(per_block, q)``, B ~ Bernoulli(1-p);
    with no jitter the count is ``per_block * Binomial(slots, 1 - p)``.

    A scenario's ``load`` (:mod:`sim.workload.load`) may make ``per_block`` a fraction
    x: each slot then sends ``floor(x)`` requests plus one more with probability
    ``x - floor(x)`` (stochastic rounding, so the mean is exactly x per slot).
    """

    process: Literal["block"] = "block"
    per_block: StrictInt = Field(ge=1)
    slot_s: FiniteFloat = Field(default=12.0, gt=0)
    offset_s: FiniteFloat = 0.0
    jitter_s: FiniteFloat = Field(default=0.0, ge=0)
    miss_probability: FiniteFloat = Field(default=0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _offset_within_slot(self) -> BlockSync:
        if not -self.slot_s <= self.offset_s <= self.slot_s:
            raise ValueError("expected offset_s between -slot_s and slot_s")
        return self

    @property
    def mean_rate(self) -> float:
        """Long-run arrivals per second."""
        return self.per_block * (1 - self.miss_probability) / self.slot_s

    def slots(self, duration_s: float) -> tuple[list[float], list[float]]:
        """Slot starts that can reach ``[0, duration_s)`` and, for each, the probability q
        that one of its requests lands inside."""
        k_lo = math.floor(-(self.offset_s + self.jitter_s) / self.slot_s)
        k_hi = math.ceil((duration_s - self.offset_s) / self.slot_s)
        starts, qs = [], []
        for k in range(k_lo, k_hi + 1):
            start = self.offset_s + self.slot_s * k
            if self.jitter_s == 0:
                q = 1.0 if 0 <= start < duration_s else 0.0
            else:
                # P(0 <= start + jitter * U < T), as a difference of two uniform CDFs (a
                # tiny jitter gives ±inf, clipped to 0 or 1).
                q = _unit((duration_s - start) / self.jitter_s) - _unit(-start / self.jitter_s)
            if q > 0:
                starts.append(start)
                qs.append(q)
        return starts, qs

    def _mean(self, duration_s, day_offset_s):
        _, q = self.slots(duration_s)
        return self.per_block * (1 - self.miss_probability) * math.fsum(q)

    def _variance(self, duration_s, day_offset_s):
        # Per slot N = B * (I_1 + ... + I_K), K the slot's request count (m, or floor(m)
        # + Bernoulli(f)): E[K] = m, E[K^2] = m^2 + f(1 - f); then Var = E[N^2] - E[N]^2.
        _, qs = self.slots(duration_s)
        m, p = self.per_block, self.miss_probability
        f = m - math.floor(m)
        return math.fsum((1 - p) * (m * q * (1 - q) + (m * m + f * (1 - f)) * q * q)
                         - (1 - p) ** 2 * m * m * q * q for q in qs)


class Ramp(_PoissonLike):
    """Poisson arrivals whose rate goes linearly from ``start_rate`` to ``end_rate`` (per
    second) between ``ramp_start_s`` and ``ramp_end_s``, constant before and after."""

    process: Literal["ramp"] = "ramp"
    start_rate: FiniteFloat = Field(ge=0)
    end_rate: FiniteFloat = Field(ge=0)
    ramp_start_s: FiniteFloat = Field(default=0.0, ge=0)
    ramp_end_s: FiniteFloat = Field(gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> Ramp:
        if self.ramp_end_s <= self.ramp_start_s:
            raise ValueError("expected ramp_end_s > ramp_start_s")
        return self

    def rate_profile(self, duration_s, day_offset_s):
        import numpy as np

        inner = [x for x in (self.ramp_start_s, self.ramp_end_s) if 0 < x < duration_s]
        knots = np.array([0.0, *inner, duration_s])
        r = np.interp(knots, [self.ramp_start_s, self.ramp_end_s], [self.start_rate, self.end_rate])
        return RateProfile(knots, r[:-1], r[1:])

    def _mean(self, duration_s, day_offset_s):
        # The trapezoids of rate_profile, in plain Python: `capsim validate` loads no numpy.
        a, b = self.ramp_start_s, self.ramp_end_s

        def rate(x):
            return self.start_rate if x <= a else self.end_rate if x >= b else \
                self.start_rate + (self.end_rate - self.start_rate) * (x - a) / (b - a)

        knots = [0.0, *(x for x in (a, b) if 0 < x < duration_s), duration_s]
        return math.fsum(0.5 * (rate(x0) + rate(x1)) * (x1 - x0)
                         for x0, x1 in itertools.pairwise(knots))


class Spikes(_PoissonLike):
    """Poisson arrivals at ``base_rate``; for ``spike_duration_s`` seconds from each time
    in ``at_s`` the rate is ``spike_rate`` instead (rates per second). Overlapping spikes
    merge rather than add up."""

    process: Literal["spikes"] = "spikes"
    base_rate: FiniteFloat = Field(ge=0)
    spike_rate: FiniteFloat = Field(ge=0)
    spike_duration_s: FiniteFloat = Field(gt=0)
    at_s: tuple[_NonNegative, ...] = ()

    def rate_profile(self, duration_s, day_offset_s):
        import numpy as np

        starts = np.sort(np.asarray(self.at_s, dtype=float))
        ends = starts + self.spike_duration_s
        if starts.size:
            # Equal durations keep the ends sorted, so a spike opens a new interval
            # exactly when it starts after the previous one ends.
            new = np.concatenate(([True], starts[1:] > ends[:-1]))
            starts, ends = starts[new], ends[np.concatenate((new[1:], [True]))]
        edges = np.column_stack((starts, ends)).ravel()
        knots = np.clip(np.concatenate(([0.0], edges, [duration_s])), 0.0, duration_s)
        rates = np.full(knots.size - 1, self.base_rate)
        rates[1::2] = self.spike_rate
        return RateProfile(knots, rates, rates)

    def _mean(self, duration_s, day_offset_s):
        # base_rate everywhere, plus the spike's excess over the union of the spikes
        # within [0, duration_s): rate_profile's integral without numpy.
        runs: list[list[float]] = []
        for start in sorted(self.at_s):
            if runs and start <= runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], start + self.spike_duration_s)
            else:
                runs.append([start, start + self.spike_duration_s])
        covered = math.fsum(min(end, duration_s) - min(start, duration_s) for start, end in runs)
        return self.base_rate * duration_s + (self.spike_rate - self.base_rate) * covered


ArrivalProcess = Annotated[
    Poisson | ConstantRate | OnOff | DailyProfile | BlockSync | Ramp | Spikes,
    Field(discriminator="process"),
]
"""Any arrival process, chosen by its ``process`` field."""

ARRIVAL_ADAPTER: TypeAdapter[ArrivalProcess] = TypeAdapter(ArrivalProcess)
"""Validates a mapping (e.g. a scenario's ``arrival`` table) into an arrival process."""
