"""The phase of the service's 12-second windows on the UTC clock, from Retry-After.

A ``434`` sent at UTC time ``t`` and answered after ``latency`` carries
``Retry-After = r``, the whole seconds (rounded up) from the service's decision, some
time in ``[t, t + latency]``, to the next window start. So the next start lies in
``(t + r - 1, t + latency + r]`` and the phase (start mod 12 s) in that arc of the
12-second circle. The estimate is the arc covered by the most such intervals (all of
them, on a consistent trace); its width is the spread. Throttle onsets then sharpen it
(:mod:`.calibrate` searches the decisions within the arc).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.vocabulary import WINDOW_S
from .recorded import Recorded

_STEP = 0.01  # seconds; the resolution of the arc


@dataclass(frozen=True)
class PhaseEstimate:
    """Phase in ``[low, high]`` (seconds after a multiple of 12 s since 00:00 UTC; ``high``
    may exceed 12 when the arc wraps), from ``consistent`` of ``observations`` values."""

    low: float
    high: float
    observations: int
    consistent: int

    @property
    def estimate(self) -> float:
        """The arc's midpoint, in ``[0, 12)``."""
        return (0.5 * (self.low + self.high)) % WINDOW_S

    @property
    def spread(self) -> float:
        """Half the arc's width."""
        return 0.5 * (self.high - self.low)


def phase_from_retry_after(rec: Recorded) -> PhaseEstimate | None:
    """The phase the recorded Retry-After values of CU throttles allow; None without any."""
    rows = (rec.observed == "throttled") & ~np.isnan(rec.retry_after_s) & rec.compared
    if not rows.any():
        return None
    t = (rec.utc_day_offset_s + rec.t_s[rows]) % WINDOW_S
    lat = np.nan_to_num(rec.latency_s[rows], nan=0.0)
    r = rec.retry_after_s[rows]
    lo = t + r - 1.0
    width = lat + 1.0
    grid = np.arange(0.0, WINDOW_S, _STEP)
    # position of each grid phase after each interval's low end, on the circle
    offset = (grid[None, :] - lo[:, None]) % WINDOW_S
    covered = (offset > 0) & (offset <= width[:, None] + 1e-9)
    counts = covered.sum(axis=0)
    best = counts.max()
    hit = counts == best
    # the longest run of best points, on the circle (unrolled twice to catch a wrap)
    twice = np.concatenate([hit, hit])
    start, length, run_start, run = 0, 0, 0, 0
    for k, v in enumerate(twice):
        if v:
            if run == 0:
                run_start = k
            run += 1
            if run > length:
                start, length = run_start, min(run, len(hit))
        else:
            run = 0
    low = grid[start % len(grid)] + (start // len(grid)) * WINDOW_S
    high = low + (length - 1) * _STEP
    return PhaseEstimate(float(low), float(high), int(rows.sum()), int(best))
