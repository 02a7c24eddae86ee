"""The library's CI gate: :func:`check`, what ``capsim check`` does (rerun a scenario
as its baseline was run, compare), returning the typed
:class:`~sim.regression.compare.Comparison` instead of printing and exiting
(``sim.check``; docs/reference/library.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import CapsimError
from .compare import Comparison

BASELINE_DIR = Path("reports/baselines")
"""Where ``capsim baseline save`` puts a scenario's baseline by default."""


def check(scenario: str | Path, *, baseline: str | Path | None = None,
          overrides: Iterable[str] = (), replications: int | None = None, jobs: int = 1,
          tolerances: Mapping[str, float] | None = None,
          on_start: Callable[[Any, int], None] | None = None,
          on_done: Callable[[int, Any], None] | None = None) -> Comparison:
    """Run ``scenario`` as its ``baseline`` (default ``reports/baselines/<name>.json``)
    was run -- its overrides, tiers and replications, then ``overrides`` on top -- and
    compare. ``tolerances`` override metrics' tolerances (``{"throttle_rate": 0.01}``,
    as ``--tolerance``) over the catalogue's and the scenario's ``[check.tolerance]``.
    ``on_start(loaded, replications)`` is called once the scenario is loaded, before
    any replication runs (``capsim check``: its size guard and progress bar);
    ``on_done(replication, summary)`` after each replication.
    ``result.exit_code`` is the command's: 0 nothing regressed, 1 a regression;
    ``result.regressions`` / ``improvements`` / ``checks`` hold the verdicts."""
    from ..api import load_scenario
    from ..jobs.replicate import replicate
    from .baseline import Baseline, load_baseline, scenario_hash
    from .compare import compare
    from .fingerprint import fingerprint
    from .settings import tolerances as effective_tolerances

    scenario = str(scenario)
    given = dict(tolerances or {})
    known = effective_tolerances()
    for name in given:
        if name not in known:
            raise CapsimError(f"unknown metric {name!r}; expected one of "
                              f"{', '.join(sorted(known))}", field="tolerances")
    plain = load_scenario(scenario)
    path = Path(baseline) if baseline is not None else (
        BASELINE_DIR / f"{plain.scenario.name}.json")
    base = load_baseline(path)
    if base.scenario != plain.scenario.name:
        raise CapsimError(f"the baseline is of scenario {base.scenario!r}, not "
                          f"{plain.scenario.name!r} ({scenario}): another scenario's "
                          "baseline", file=str(path), field="scenario")
    all_overrides = [*base.overrides, *overrides]
    tiers = list(base.tier_selection)
    reps = replications or base.replications
    loaded = load_scenario(scenario, tiers=tiers, overrides=all_overrides)
    if on_start is not None:
        on_start(loaded, reps)
    summaries = replicate(loaded, replications=reps, jobs=jobs, on_done=on_done)
    digest = scenario_hash(scenario, all_overrides, tiers)
    now = Baseline.from_summaries(
        summaries, content_hash=digest, scenario_file=scenario, overrides=all_overrides,
        tier_selection=tiers, inputs=fingerprint(loaded, digest))
    tols = effective_tolerances(loaded.scenario.check, given)
    return compare(base, now, tols, base_label=str(path), now_label=scenario)
