"""``capsim run --replications N``: the run's replications 1 .. N-1, tier by tier.

Replication 0 is the run itself (:func:`sim.runner.run.run`, which writes the records
and the report). Replication r > 0 is the same scenario at the seed
:func:`sim.core.rng.replication_seed` (seed, r) -- the seed a sweep's replication r
gets -- run on every tier; within it every tier replays the same demand (common random
numbers). Only each tier's summary is kept: its spool is removed as soon as the summary
is read, so the temporary disk holds one replication's tier at a time (one per worker).
Every replication runs on the engine replication 0 ran on (``summary.engine``), so the
replications of a compiled run are compiled too, and give the rows the SimPy model would.

With ``jobs > 1`` (or an executor, e.g. Dask's) the (replication, tier) pairs are
spread over a process pool (or the executor's workers); each
worker draws its replication's demand from its seed, so the summaries, gathered by
(replication, tier), are the same whatever ``jobs`` is.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import as_completed
from pathlib import Path

from ..compiled.choice import tier_run_class
from ..config.resolved import LoadedScenario
from ..config.selection import load_scenario
from ..config.tiers import Tier
from ..core.errors import CapsimError
from ..core.limits import MAX_REPLICATIONS
from ..core.rng import replication_seed
from ..core.workers import process_pool
from ..metrics.figures import tier_summary
from ..metrics.replications import replications_summary
from ..results.summary import TierSummary
from ..workload.demand import Plan, build_plan
from .records import spool_folder
from .run import RunOutput, shared_plan


def check_replications(n: int) -> int:
    """``n`` if it is a number of replications a run takes, else a
    :class:`~sim.core.errors.CapsimError` naming ``--replications``."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_REPLICATIONS:
        raise CapsimError(f"expected a whole number from 1 to {MAX_REPLICATIONS:,}, got {n!r} "
                          "(the bound every command shares: sim/core/limits.py)",
                          field="--replications")
    return n


def seeds(loaded: LoadedScenario, n: int) -> list[int]:
    """The seed of each of ``n`` replications of ``loaded`` (replication 0: its own)."""
    return [replication_seed(loaded.scenario.seed, r) for r in range(n)]


def _summary(plan: Plan, tier: Tier, engine: str = "simpy") -> TierSummary:
    folder = spool_folder()
    try:
        run = tier_run_class(engine)(plan, tier, spool=str(Path(folder.name) / "tier"))
        result = run.run()
        return tier_summary(result, plan)
    finally:
        folder.cleanup()


def _pair(loaded: LoadedScenario, seed: int, tier: Tier, engine: str = "simpy"
          ) -> TierSummary:
    """One tier of one replication, in a worker process."""
    return _summary(build_plan(load_scenario(loaded, seed=seed)), tier, engine)


def _pair_item(item: tuple[int, int, LoadedScenario, int, Tier, str]) -> TierSummary:
    """:func:`_pair` of an executor's item ``(replication, tier index, loaded, seed, tier,
    engine)``."""
    return _pair(*item[2:])


def replicate_tiers(loaded: LoadedScenario, n: int, *, jobs: int = 1,
                    done: Callable[[int], None] | None = None,
                    executor=None, engine: str = "simpy") -> list[list[TierSummary]]:
    """The tier summaries of replications 1 .. ``n``-1 of ``loaded``, in replication
    and tier order; ``done(r)`` is called as replication r's last tier finishes.
    ``executor`` (a :class:`sim.jobs.executors.Executor`, e.g. Dask's) runs the pairs
    instead of a local pool of ``jobs`` processes; ``engine`` (``simpy`` or
    ``compiled``, as chosen for the run) runs each tier."""
    check_replications(n)
    seeds_ = seeds(loaded, n)[1:]
    tiers = list(loaded.tiers)
    out: list[list[TierSummary | None]] = [[None] * len(tiers) for _ in seeds_]
    if executor is not None and seeds_:
        items = [(r, i, loaded, seed, tier, engine)
                 for r, seed in enumerate(seeds_) for i, tier in enumerate(tiers)]
        left = [len(tiers)] * len(seeds_)
        for (r, i, *_), summary in executor.as_completed(_pair_item, items):
            out[r][i] = summary
            left[r] -= 1
            if done and left[r] == 0:
                done(r + 1)
    elif jobs > 1 and seeds_:
        with process_pool(jobs) as pool:
            futures = {pool.submit(_pair, loaded, seed, tier, engine): (r, i)
                       for r, seed in enumerate(seeds_) for i, tier in enumerate(tiers)}
            left = [len(tiers)] * len(seeds_)
            for future in as_completed(futures):
                r, i = futures[future]
                out[r][i] = future.result()
                left[r] -= 1
                if done and left[r] == 0:
                    done(r + 1)
    else:
        for r, seed in enumerate(seeds_):
            folder = spool_folder()  # the replication's demand, drawn once for its tiers
            try:
                plan = shared_plan(build_plan(load_scenario(loaded, seed=seed)), folder.name,
                                   len(tiers))
                out[r] = [_summary(plan, tier, engine) for tier in tiers]
            finally:
                folder.cleanup()
            if done:
                done(r + 1)
    return out  # type: ignore[return-value]


def with_replications(out: RunOutput, loaded: LoadedScenario, n: int, *, jobs: int = 1,
                      progress: Callable[[int, int], None] | None = None,
                      executor=None) -> RunOutput:
    """``out`` (replication 0, the run of ``loaded``) with its summary's
    ``replications`` section, after running replications 1 .. ``n``-1; nothing changes
    for ``n`` = 1. ``progress(done, n)`` after each replication (replication 0 counted)."""
    if check_replications(n) == 1:
        return out
    finished = [1]

    def done(_r: int) -> None:
        finished[0] += 1
        progress(finished[0], n)

    if progress:
        progress(1, n)
    rest = replicate_tiers(loaded, n, jobs=jobs, done=done if progress else None,
                           executor=executor, engine=out.summary.engine or "simpy")
    section = replications_summary([list(out.summary.tiers), *rest], seeds(loaded, n))
    out.summary = out.summary.model_copy(update={"replications": section})
    return out
