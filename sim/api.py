"""The library entry point: run a scenario, get typed results, write the report.

    import sim
    result = sim.run("workloads/searcher.toml", overrides=["duration=600"], tiers=["Search"])
    result.summary.recommended.tier          # typed summary (sim.summary.RunSummary)
    result.attempts.groupby("outcome").size()  # one row per attempt (pandas)
    result.write("reports/searcher")           # exactly what `capsim run` writes

``capsim run`` is a thin layer over :func:`run` and :meth:`RunResult.write`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from .policy.resolved import LoadedScenario, load
from .policy.tiers import CATALOG, Tier, find_tier
from .runner import RunOutput
from .runner import run as _run_loaded

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


def load_scenario(scenario: str | Path | LoadedScenario | None = None, *,
                  tiers: Iterable[str] | None = None, seed: int | None = None,
                  overrides: Iterable[str] | None = None) -> LoadedScenario:
    """Load ``scenario`` (a path, None for the built-in default, or already loaded) with
    ``--set``-style ``overrides``, a ``seed`` and a tier selection applied."""
    overrides = [*(overrides or ())]
    if isinstance(scenario, LoadedScenario):
        if overrides:
            raise ValueError("overrides apply to a scenario file: pass its path, "
                             "or override before loading (sim.policy.load)")
        loaded = scenario
        if seed is not None:
            sc = loaded.scenario.model_copy(update={"seed": int(seed)})
            loaded = LoadedScenario(sc, loaded.path, loaded.tiers, loaded.pricing,
                                    loaded.pricing_overrides)
    else:
        extra = [f"seed={seed}"] if seed is not None else []
        loaded = load(scenario, [*overrides, *extra])
    names = [tiers] if isinstance(tiers, str) else list(tiers or ())
    if names:
        catalog = tuple(loaded.tiers) + tuple(t for t in CATALOG if t not in loaded.tiers)
        chosen = tuple(dict.fromkeys(find_tier(name, catalog) for name in names))
        loaded = LoadedScenario(loaded.scenario, loaded.path, chosen, loaded.pricing,
                                loaded.pricing_overrides)
    return loaded


def run(scenario: str | Path | LoadedScenario | None = None, *,
        tiers: Iterable[str] | None = None, seed: int | None = None,
        overrides: Iterable[str] | None = None, jobs: int = 1,
        progress: Progress | None = None, records: str = "attempts") -> RunResult:
    """Simulate ``scenario`` against its tiers (or ``tiers``, by name) and return the results.

    ``scenario`` is a TOML path, None for the built-in default, or a
    :class:`~sim.policy.LoadedScenario`; ``overrides`` take the dotted paths of
    ``capsim run --set`` (``["duration=600", "sources[0].arrival.rate=40"]``); ``jobs``
    simulates tiers in worker processes (same results); ``records`` chooses what
    :meth:`RunResult.write` writes per row: ``"attempts"`` (``requests.parquet`` and
    ``windows.parquet``), ``"windows"`` (``windows.parquet`` only, what sweeps use) or
    ``"none"``. Attempt rows are spooled to disk as the run goes either way, and
    ``result.attempts`` reads them back whole. A user's mistake raises
    :class:`~sim.errors.CapsimError`.
    """
    loaded = load_scenario(scenario, tiers=tiers, seed=seed, overrides=overrides)
    out = _run_loaded(loaded, jobs=jobs, progress=progress, records=records)
    return RunResult(**{f.name: getattr(out, f.name) for f in fields(out)})
