"""The ``replications`` section of ``summary.json`` (``capsim run --replications N``,
N > 1), and the interval figures it shares with ``sweep.json``.

Replication 0 is the run the rest of the summary describes (same seed as a plain
``capsim run``); replication r > 0 is the same scenario at the seed
:func:`sim.core.rng.replication_seed` (seed, r), the one sweeps use. Within a
replication every tier sees the same demand (common random numbers). The section gives,
per tier, the share of replications meeting the SLO (Wilson interval) and the mean and
Student-t interval of the report's main figures; and how often the recommendation of
replication 0 held.

Imports only pydantic and :mod:`sim.core.intervals` (no numpy, no SimPy).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from ..core.intervals import Proportion, mean_interval


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class IntervalFigure(_Frozen):
    """A metric over replications: mean (None: undefined in every one), the 95 %
    half-width and bounds (None with one replication), and the replications counted."""

    mean: float | None
    half_width: float | None
    low: float | None
    high: float | None
    n: int

    @classmethod
    def of(cls, values) -> IntervalFigure:
        """The Student-t interval of ``values`` (:func:`sim.core.intervals.mean_interval`)."""
        iv = mean_interval(list(values))
        return cls(mean=None if math.isnan(iv.mean) else iv.mean, half_width=iv.half_width,
                   low=iv.low, high=iv.high, n=iv.n)


class ProportionFigure(_Frozen):
    """``count`` of ``n`` replications, their ``share`` and its 95 % Wilson interval."""

    count: int
    n: int
    share: float
    low: float
    high: float

    @classmethod
    def of(cls, p: Proportion) -> ProportionFigure:
        """The figure of a :class:`sim.core.intervals.Proportion`."""
        return cls(count=p.count, n=p.n, share=p.share, low=p.low, high=p.high)


class ReplicationTier(_Frozen):
    """One tier across the replications."""

    tier: str
    slo_met: ProportionFigure
    throttle_rate: IntervalFigure
    failure_rate: IntervalFigure
    p99_latency_ms: IntervalFigure
    cu_settled: IntervalFigure
    cu_peak_window_used: IntervalFigure
    allowance_lasts_h: IntervalFigure


class ReplicationRun(_Frozen):
    """One replication: its seed (as text: it may exceed 64 bits), the tier it would
    recommend (None: no tier meets the SLO) and the tiers meeting the SLO."""

    replication: int
    seed: str
    recommended: str | None
    meeting_slo: tuple[str, ...]


class ReplicationsSummary(_Frozen):
    """``summary.json``'s ``replications``: present only for ``--replications N`` > 1.

    ``recommended`` is replication 0's (the summary's own recommendation);
    ``recommendation_held``: the replications recommending that same tier;
    ``recommended_met_slo``: those in which that tier met the SLO (None without a
    recommendation); ``meeting_slo_in_every_replication``: the tier the recommendation
    rule picks among the tiers meeting the SLO in every replication (the pooled verdict).
    """

    n: int
    confidence_level: float
    proportion_interval: str
    seed_rule: str
    records: str
    recommended: str | None
    recommendation_held: ProportionFigure
    recommended_met_slo: ProportionFigure | None
    meeting_slo_in_every_replication: str | None
    runs: tuple[ReplicationRun, ...]
    tiers: tuple[ReplicationTier, ...]

    def tier(self, name: str) -> ReplicationTier:
        """The tier called ``name`` (KeyError if it was not simulated)."""
        for t in self.tiers:
            if t.tier == name:
                return t
        raise KeyError(name)
