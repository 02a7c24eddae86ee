"""Statistics over replications: means with Student-t confidence intervals, and
proportions with Wilson score intervals.

Replications of a run (independent random streams, same scenario) give independent,
identically distributed samples of every headline metric; their mean's 95 % interval
is ``mean ± t(0.975, n-1) · s / sqrt(n)``. With one replication there is no interval
(``half_width`` is ``None``), never a falsely precise zero.

A yes/no per replication (a tier meets the SLO; the same tier is recommended) counts
``k`` successes in ``n`` independent trials: :func:`proportion_interval` gives the
Wilson score interval of the success probability. Wilson rather than Clopper-Pearson:
its coverage is close to the nominal level on average over the probability (Brown, Cai
and DasGupta 2001) where Clopper-Pearson's is well above it (too wide for the small
``n`` replications have), and unlike the Wald interval it is never empty or degenerate
at ``k = 0`` or ``k = n`` (10 of 10 gives 72.2-100 %, not 100-100 %).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """A sample mean and the half-width of its confidence interval (``None`` if n < 2)."""

    mean: float
    half_width: float | None
    n: int
    level: float = 0.95

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width

    def overlaps(self, other: Interval) -> bool:
        """True when the two intervals share a point (a point estimate is its own interval)."""
        lo_a, hi_a = (self.low, self.high) if self.half_width is not None else (self.mean,) * 2
        lo_b, hi_b = (other.low, other.high) if other.half_width is not None else (other.mean,) * 2
        return lo_a <= hi_b and lo_b <= hi_a


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def mean_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Mean of ``values`` with a two-sided Student-t interval at ``level``.

    Values that are ``None`` or NaN (a metric undefined in a replication, such as a
    latency percentile with no successful request) are left out; ``n`` counts the rest.
    """
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return Interval(math.nan, None, 0, level)
    mean = math.fsum(xs) / n
    if n < 2:
        return Interval(mean, None, n, level)
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    half = t_quantile(0.5 + level / 2, n - 1) * math.sqrt(var / n)
    return Interval(mean, half, n, level)


@dataclass(frozen=True)
class Proportion:
    """``count`` successes of ``n`` trials, their share and its confidence interval."""

    count: int
    n: int
    low: float
    high: float
    level: float = 0.95

    @property
    def share(self) -> float:
        return self.count / self.n


def proportion_interval(count: int, n: int, level: float = 0.95) -> Proportion:
    """The Wilson score interval at ``level`` of a success probability observed as
    ``count`` successes in ``n`` trials (``n >= 1``)."""
    from scipy.stats import binomtest

    if n < 1 or not 0 <= count <= n:
        raise ValueError(f"expected 0 <= count <= n and n >= 1, got {count} of {n}")
    ci = binomtest(int(count), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return Proportion(int(count), int(n), float(ci.low), float(ci.high), level)


def format_interval(mean: float | None, half_width: float | None = None,
                    digits: int = 3) -> str:
    """``mean ± half_width`` for a table, both to the same decimals, thousands separated
    and never in exponent notation: the half-width to two significant figures sets the
    decimals (``474,467 ± 1,960``, ``0.0123 ± 0.0041``); without one, the mean has
    ``digits`` significant figures (at least its whole part). ``–`` for no mean."""
    if mean is None or not math.isfinite(mean):
        return "–"

    def decimals(x: float, significant: int) -> int:
        if x == 0 or not math.isfinite(x):
            return 0
        return min(10, max(0, significant - 1 - math.floor(math.log10(abs(x)))))

    if half_width is None:
        return f"{mean:,.{decimals(mean, digits)}f}"
    d = decimals(half_width, 2)
    return f"{mean:,.{d}f} ± {half_width:,.{d}f}"
