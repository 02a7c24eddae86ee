"""One-dimensional search for the values that maximise agreement, as an interval.

Agreement is a step function of a price (or of the window phase): throttle onsets move
only when a window's sum crosses the budget. So the answer is not a point but the
interval of values that all reach the best agreement; :func:`best_interval` finds it on
a grid and sharpens both edges by bisection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    """The values in ``[low, high]`` reach ``score`` (the best on the grid); ``at_low`` /
    ``at_high`` say the interval reaches an end of the searched range, so the data only
    bound the value on that side."""

    low: float
    high: float
    score: int
    at_low: bool
    at_high: bool

    @property
    def mid(self) -> float:
        """The interval's midpoint."""
        return 0.5 * (self.low + self.high)


def best_interval(score: Callable[[float], int], grid: np.ndarray, *,
                  prefer: float | None = None, bisect_steps: int = 14) -> Interval:
    """The run of ``grid`` values with the highest ``score`` (the run nearest ``prefer``
    when several tie), its edges sharpened by bisection against the neighbouring values."""
    grid = np.asarray(grid, dtype=float)
    scores = np.array([score(float(v)) for v in grid])
    best = scores.max()
    hits = np.flatnonzero(scores == best)
    runs = np.split(hits, np.flatnonzero(np.diff(hits) > 1) + 1)
    if prefer is not None:
        run = min(runs, key=lambda r: min(abs(grid[r[0]] - prefer), abs(grid[r[-1]] - prefer),
                                          0 if grid[r[0]] <= prefer <= grid[r[-1]] else np.inf))
    else:
        run = max(runs, key=len)
    i, j = int(run[0]), int(run[-1])
    low, high = grid[i], grid[j]
    if i > 0:
        low = _edge(score, grid[i - 1], grid[i], best, bisect_steps)
    if j < len(grid) - 1:
        high = _edge(score, grid[j + 1], grid[j], best, bisect_steps)
    return Interval(float(low), float(high), int(best), i == 0, j == len(grid) - 1)


def _edge(score, outside: float, inside: float, best: int, steps: int) -> float:
    """Bisect towards the last value still scoring ``best`` between the two."""
    for _ in range(steps):
        mid = 0.5 * (outside + inside)
        if score(mid) >= best:
            inside = mid
        else:
            outside = mid
    return inside
