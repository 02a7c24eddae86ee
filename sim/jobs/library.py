"""The library's what-ifs: :func:`sweep` and :func:`headroom`, what ``capsim sweep`` and
``capsim headroom`` do, returning typed results (``sim.sweep``, ``sim.headroom``; see
docs/reference/library.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from .headroom import Headroom
from .sweep import SweepResult


def sweep(scenario: str | Path | None = None, *, vary: Iterable[str] = (),
          replications: int = 1, tiers: Iterable[str] = (), overrides: Iterable[str] = (),
          out: str | Path | None = None, variants: bool = True, jobs: int = 1,
          keep_records: bool = False,
          progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Run ``scenario`` over a grid (``vary``: ``"KEY.PATH=V1,V2"`` strings, as
    ``--vary``), its ``[[variants]]`` (unless ``variants=False``) and ``replications``,
    into the sweep folder ``out`` (default ``reports/<name>-sweep``; resumed when it
    holds the same sweep). Returns :class:`~sim.jobs.sweep.SweepResult`: ``folder``,
    ``points`` (pandas, one row per point x variant x tier x replication), ``document``
    (:class:`~sim.jobs.sweep_results.SweepDocument`, ``sweep.json``) and ``ran``.
    ``progress(done, total)`` hears of each finished run."""
    from .executors import make_executor
    from .sweep import run_sweep
    from .sweep_plan import plan_sweep

    plan = plan_sweep(None if scenario is None else str(scenario), vary=list(vary),
                      replications=replications, tiers=list(tiers),
                      overrides=list(overrides), variants=variants)
    out_dir = Path(out) if out is not None else Path("reports") / f"{plan.scenario_name}-sweep"
    with make_executor(jobs) as executor:
        return run_sweep(plan, out_dir, executor, keep_records=keep_records,
                         progress=progress)


def headroom(scenario: str | Path | None = None, *, tiers: Iterable[str] = (),
             overrides: Iterable[str] = (), replications: int = 1, max_load: float = 100.0,
             tolerance: float = 0.02, jobs: int = 1,
             progress: Callable[[str], None] | None = None) -> Headroom:
    """Per tier, the largest multiple of ``scenario``'s load that still meets its SLO
    and what breaks first beyond it, as ``capsim headroom``. Returns
    :class:`~sim.jobs.headroom.Headroom` (``tiers``: one
    :class:`~sim.jobs.headroom.TierHeadroom` each; ``to_dict()`` is ``--json``'s)."""
    from .executors import make_executor
    from .headroom import find_headroom

    with make_executor(jobs) as executor:
        return find_headroom(None if scenario is None else str(scenario), tiers=list(tiers),
                             overrides=list(overrides), replications=replications,
                             max_load=max_load, tolerance=tolerance, executor=executor,
                             progress=progress)
