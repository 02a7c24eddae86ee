"""Run a scenario's replications and keep their typed summaries.

Replication ``r`` is ``sim.run(..., seed=replication_seed(seed, r))``: replication 0 is
the plain run (same seed as ``capsim run``), the others get seeds derived by name, so
any replication can be rerun alone and adding replications never changes the first
ones. Aggregate the summaries with :func:`sim.core.intervals.mean_interval` (the CI gate does,
in :meth:`sim.regression.baseline.Baseline.from_summaries`); sweeps can reuse this.

    summaries = replicate("workloads/searcher.toml", replications=5,
                          overrides=["duration=600"])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..core.rng import replication_seed
from ..results.summary import RunSummary


def replicate(scenario, *, replications: int = 1, seed: int | None = None,
              overrides: Iterable[str] = (), tiers: Iterable[str] = (), jobs: int = 1,
              on_done: Callable[[int, RunSummary], None] | None = None) -> list[RunSummary]:
    """The summaries of ``replications`` replications of ``scenario`` (a path, None for
    the built-in default, or a loaded scenario), in replication order.

    ``seed`` defaults to the scenario's; ``overrides`` and ``tiers`` are those of
    :func:`sim.run`; ``on_done(r, summary)`` is called as each replication finishes.
    """
    from ..api import load_scenario, run

    if replications < 1:
        raise ValueError("replications must be >= 1")
    loaded = load_scenario(scenario if not isinstance(scenario, Path) else str(scenario),
                           tiers=tiers, overrides=overrides)
    base = loaded.scenario.seed if seed is None else int(seed)
    out = []
    for r in range(replications):
        with run(loaded, seed=replication_seed(base, r), jobs=jobs, records="none",
                 keep_rows=False) as result:  # (only the summary is used)
            summary = result.summary
        out.append(summary)
        if on_done is not None:
            on_done(r, summary)
    return out
