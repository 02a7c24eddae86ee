"""The ``replications`` section of ``summary.json`` from each replication's tier summaries.

Per tier: the replications meeting the SLO (Wilson interval,
:func:`sim.core.intervals.proportion_interval`) and the mean and Student-t interval
(:func:`sim.core.intervals.mean_interval`) of the report's main figures. The
recommendation stays replication 0's (the plain run's, so the summary's tables, plots
and records describe one run); the section says in how many replications the same tier
would be recommended (:func:`sim.metrics.figures.recommend` on each), in how many it met
the SLO, and which tier the same rule picks among the tiers meeting the SLO in every
replication (the pooled verdict).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.intervals import proportion_interval
from ..results.replications import (
    IntervalFigure,
    ProportionFigure,
    ReplicationRun,
    ReplicationsSummary,
    ReplicationTier,
)
from ..results.summary import TierSummary
from .figures import recommend

SEED_RULE = ("replication 0: the run's seed; replication r > 0: "
             "sim.core.rng.replication_seed(seed, r), as in capsim sweep")
RECORDS = "replication 0 only"

FIGURES: dict[str, Callable[[TierSummary], float | None]] = {
    "throttle_rate": lambda t: t.throttle_rate,
    "failure_rate": lambda t: t.failure_rate,
    "p99_latency_ms": lambda t: t.latency_ms.p99,
    "cu_settled": lambda t: t.cu.settled,
    "cu_peak_window_used": lambda t: t.cu.peak_window_used,
    "allowance_lasts_h": lambda t: t.daily_allowance.lasts_h,
}
"""The figures given an interval per tier (field of :class:`ReplicationTier` -> reader)."""


def _share(count: int, n: int) -> ProportionFigure:
    return ProportionFigure.of(proportion_interval(count, n))


def replications_summary(runs: Sequence[Sequence[TierSummary]],
                         seeds: Sequence[int]) -> ReplicationsSummary:
    """The section for ``runs[r]``, the tier summaries of replication r (replication 0
    first, every replication with the same tiers in the same order) run at ``seeds[r]``."""
    n = len(runs)
    if n < 2 or len(seeds) != n:
        raise ValueError("expected two or more replications, one seed each")
    names = [t.tier for t in runs[0]]
    if any([t.tier for t in run] != names for run in runs):
        raise ValueError("every replication must have the same tiers in the same order")
    recommended = [recommend(list(run)).tier for run in runs]
    first = recommended[0]
    position = names.index(first) if first is not None else None
    met_first = (None if position is None
                 else _share(sum(run[position].meets_slo for run in runs), n))
    always = [t.model_copy(update={"meets_slo": all(run[i].meets_slo for run in runs)})
              for i, t in enumerate(runs[0])]
    tiers = tuple(
        ReplicationTier(tier=name,
                        slo_met=_share(sum(run[i].meets_slo for run in runs), n),
                        **{field: IntervalFigure.of([read(run[i]) for run in runs])
                           for field, read in FIGURES.items()})
        for i, name in enumerate(names))
    return ReplicationsSummary(
        n=n, confidence_level=0.95, proportion_interval="wilson", seed_rule=SEED_RULE,
        records=RECORDS, recommended=first,
        recommendation_held=_share(sum(r == first for r in recommended), n),
        recommended_met_slo=met_first,
        meeting_slo_in_every_replication=recommend(always).tier,
        runs=tuple(ReplicationRun(replication=r, seed=str(seed), recommended=rec,
                                  meeting_slo=tuple(t.tier for t in run if t.meets_slo))
                   for r, (seed, rec, run) in enumerate(zip(seeds, recommended, runs,
                                                            strict=True))),
        tiers=tiers)
