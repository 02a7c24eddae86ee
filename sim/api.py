"""The library entry point: run a scenario, get typed results, write the report.

    import sim
    result = sim.run("workloads/searcher.toml", overrides=["duration=600"], tiers=["Search"])
    result.summary.recommended.tier          # typed summary (sim.results.summary.RunSummary)
    result.attempts.groupby("outcome").size()  # one row per attempt (pandas)
    result.write("reports/searcher")           # exactly what `capsim run` writes

``capsim run`` is a thin layer over :func:`run` and :meth:`RunResult.write`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from .config.resolved import LoadedScenario
from .config.selection import load_scenario
from .config.tiers import Tier
from .runner.run import RunOutput
from .runner.run import run as _run_loaded

Progress = Callable[[Tier, float], None]
"""``progress(tier, simulated_seconds)``, called as each tier's simulation advances."""


@dataclass
class RunResult(RunOutput):
    """A run's results: ``summary`` (typed), ``attempts``, ``windows`` and ``streams``
    tables (pandas, one row per attempt / 12-second window / websocket session), and the
    latencies and slot steps the plots use."""

    def write(self, out_dir: str | Path) -> Path:
        """Write the report folder (replaced whole, atomically) and return its path."""
        from .report.writer import write_report

        return write_report(self, out_dir)


def run(scenario: str | Path | LoadedScenario | None = None, *,
        tiers: Iterable[str] | None = None, seed: int | None = None,
        overrides: Iterable[str] | None = None, jobs: int = 1,
        progress: Progress | None = None, records: str = "attempts", replications: int = 1,
        replication_progress: Callable[[int, int], None] | None = None,
        executor=None, engine: str = "auto", keep_rows: bool = True) -> RunResult:
    """Simulate ``scenario`` against its tiers (or ``tiers``, by name) and return the results.

    ``scenario`` is a TOML path, None for the built-in default, or a
    :class:`~sim.config.LoadedScenario`; ``overrides`` take the dotted paths of
    ``capsim run --set`` (``["duration=600", "sources[0].arrival.rate=40"]``); ``jobs``
    simulates tiers in worker processes (same results); ``records`` chooses what
    :meth:`RunResult.write` writes per row: ``"attempts"`` (``requests.parquet`` and
    ``windows.parquet``), ``"windows"`` (``windows.parquet`` only, what sweeps use) or
    ``"none"``. Attempt rows are spooled to disk as the run goes either way, and
    ``result.attempts`` reads them back whole. A user's mistake raises
    :class:`~sim.core.errors.CapsimError`.

    ``replications`` (1 to 1,000) > 1 also runs the scenario at the seeds of
    replications 1 .. N-1 (those of ``capsim sweep``) and adds
    ``summary.replications`` (:mod:`sim.results.replications`): per tier, the share of
    replications meeting the SLO and intervals of the main figures, and how often the
    recommendation held. Everything else (the summary's tiers and recommendation, the
    tables) is replication 0's, the plain run; ``jobs`` also spreads the replications'
    tiers over worker processes (same results); ``replication_progress(done, total)``
    is called as replications finish.

    ``executor`` (a :class:`sim.jobs.executors.Executor`, e.g.
    ``sim.jobs.executors.DaskExecutor(local_workers=4)``; the caller closes it) runs
    the tiers and replications instead of ``jobs`` local processes (same results).
    ``engine``: ``"auto"`` (the compiled engine where it covers every feature of the
    scenario, else the SimPy model), ``"simpy"`` or ``"compiled"``
    (:func:`sim.compiled.choice.choose_engine`; the same rows either way).
    ``keep_rows=False`` (with ``records`` ``"windows"`` or ``"none"``) removes each
    tier's spooled rows once its summary is read: the temporary disk then holds one
    tier's at a time, and ``attempts`` cannot be read.
    """
    from .runner.replications import check_replications, with_replications

    check_replications(replications)
    loaded = load_scenario(scenario, tiers=tiers, seed=seed, overrides=overrides)
    out = _run_loaded(loaded, jobs=jobs, progress=progress, records=records,
                      executor=executor, engine=engine, keep_rows=keep_rows)
    out = with_replications(out, loaded, replications, jobs=jobs,
                            progress=replication_progress, executor=executor)
    return RunResult(**{f.name: getattr(out, f.name) for f in fields(out)})
