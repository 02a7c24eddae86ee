"""One change searched on one tier (:class:`Search`): the settings tried, mildest first,
and how far each left the tier from its SLO (:func:`shortfall`).

A discrete change tries its settings in order and stops at the first that meets; a
continuous one (a pacing rate) doubles or halves from its closed-form start until the
verdict flips, then bisects geometrically to ``tolerance``. The loop that runs every
search in step is :mod:`sim.advisor.search`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..config.tiers import Tier
from ..results.summary import SLO_CRITERIA, TierSummary
from .catalogue import Change, Step


def shortfall(t: TierSummary, slo) -> float:
    """How far ``t`` is from meeting ``slo``: the largest ratio of an SLO figure to its
    limit (1 or less: within it; an undefined p99 counts as far; the daily allowance as
    24 h over the hours it lasts)."""
    worst = 0.0
    for c in SLO_CRITERIA:
        v, limit = c.read(t), c.limit(slo)
        if v is None:
            worst = max(worst, 10.0)
            continue
        worst = max(worst, v / limit if limit > 0 else (1.0 + 1e6 * v))
    lasts = t.daily_allowance.lasts_h
    if getattr(slo, "allowance_must_last_day", False) and lasts is not None:
        worst = max(worst, 24.0 / lasts if lasts > 0 else math.inf)
    return worst


@dataclass
class Search:
    """One change on one tier: the settings tried, the mildest meeting one found."""

    tier: Tier
    change: Change
    budget_cu: float
    tolerance: float
    i: int = 0  # discrete: the next setting
    value: Any = None  # continuous: the next value
    met: Any = None  # continuous: the mildest value known to meet
    failed: Any = None  # continuous: the strongest value known to fail
    found: tuple[Step, TierSummary] | None = None
    closest: tuple[float, Step, TierSummary] | None = None
    closest_value: Any = None  # continuous: the value of ``closest`` (search units)
    done: bool = False
    evaluations: int = 0
    bounds: tuple[float, float] = field(default=(0.0, 0.0))

    def __post_init__(self) -> None:
        if self.change.continuous:
            self.value = self.change.start(self.budget_cu)
            self.bounds = (self.value * 8, self.value / 4)  # (mildest, strongest)

    def next_step(self) -> Step | None:
        if self.done:
            return None
        if self.change.continuous:
            return self.change.step(self.value, self.budget_cu)
        return self.change.step(self.change.values[self.i], self.budget_cu)

    def record(self, step: Step, t: TierSummary, slo) -> None:
        self.evaluations += 1
        gap = shortfall(t, slo)
        if self.closest is None or gap < self.closest[0]:
            self.closest = (gap, step, t)
            self.closest_value = self.value
        if not self.change.continuous:
            if t.meets_slo:
                self.found, self.done = (step, t), True
            else:
                self.i += 1
                self.done = self.i >= len(self.change.values)
            return
        v = self.value
        if t.meets_slo:
            self.met, self.found = v, (step, t)
        else:
            self.failed = v
        mildest, strongest = self.bounds
        if self.failed is None:  # meets: go milder
            if v >= mildest:
                self.done = True
            self.value = min(v * 2, mildest)
        elif self.met is None:  # fails: go stronger
            if v <= strongest:
                self.done = True
            self.value = max(v / 2, strongest)
        elif max(self.met, self.failed) / min(self.met, self.failed) <= 1 + self.tolerance:
            self.done = True
        else:
            self.value = math.sqrt(self.met * self.failed)
