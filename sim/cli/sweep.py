"""``capsim sweep`` and ``capsim headroom``: what-ifs over many runs (sim/jobs/)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..core.limits import MAX_LOAD_MULTIPLE, MAX_REPLICATIONS, MIN_RELATIVE_TOLERANCE
from .options import (
    FiniteFloatRange,
    dask_options,
    jobs_option,
    quiet_option,
    set_option,
    tier_option,
)


def executor_options(f):
    """--jobs / --dask-scheduler / --dask-local (at most one)."""
    f = dask_options("this job")(f)
    f = jobs_option("Runs in parallel in a local process pool.")(f)
    return f


def _set_option(f):
    f = click.option("--calibration", type=click.Path(), metavar="DIR",
                     help="Take prices, window phase and refund rule from a calibration "
                          "folder (capsim calibrate) or its calibration.json, in every "
                          "run; --set still wins.")(f)
    return set_option("Override a scenario value in every run, e.g. --set duration=600 "
                      "(value parsed as TOML, as capsim run --set).")(f)


def _calibrated(calibration: str | None, overrides: tuple[str, ...]) -> list[str]:
    """``overrides`` after the calibration's (so that --set wins)."""
    if not calibration:
        return list(overrides)
    from ..calibration.use import read_calibration

    return [*read_calibration(calibration).overrides, *overrides]


@click.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@click.option("--vary", multiple=True, metavar="KEY.PATH=V1,V2,...",
              help="Values of a scenario key (any --set path); several --vary give the "
                   "full factorial.")
@click.option("--replications", type=click.IntRange(1, MAX_REPLICATIONS), default=1,
              show_default=True,
              help="Independent replications per point (seeds derived from the scenario's).")
@tier_option()
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Sweep folder (default: reports/<scenario name>-sweep); rerun the same "
                   "command to resume.")
@click.option("--keep-records", is_flag=True,
              help="Also write each run's Parquet tables under DIR/records/<run>/.")
@click.option("--no-variants", is_flag=True, help="Ignore the scenario's [[variants]].")
@executor_options
@_set_option
@quiet_option
def sweep(scenario, vary, replications, tiers, out, keep_records, no_variants, jobs,
          dask_scheduler, dask_local, calibration, overrides, quiet):
    """Run SCENARIO over a grid of values (--vary), its [[variants]] and replications.

    SCENARIO defaults to the built-in one, as for capsim run.

    Writes points.parquet (one row per point x variant x tier x replication),
    sweep.json (means with 95 % intervals, the cheapest tier meeting the SLO per point,
    variants against the base), report.md and report.html. Each run is kept in
    DIR/runs/ as it finishes: the same command again runs only what is missing.
    """
    from ..jobs.executors import make_executor
    from ..jobs.sweep import run_sweep
    from ..jobs.sweep_plan import plan_sweep
    from ..jobs.sweep_report import decided_notes, difference_lines, point_line
    from .progress import Progress

    plan = plan_sweep(scenario, vary=list(vary), replications=replications,
                      tiers=list(tiers), overrides=_calibrated(calibration, overrides),
                      variants=not no_variants)
    _check_sizes({(r.point, r.variant): r for r in plan.runs}.values(), jobs)
    out_dir = Path(out) if out else Path("reports") / f"{plan.scenario_name}-sweep"
    with make_executor(jobs, dask_scheduler, dask_local) as executor, \
            Progress("sweep", len(plan.runs), "runs", quiet=quiet) as bar:
        result = run_sweep(plan, out_dir, executor, keep_records=keep_records,
                           progress=bar.to,
                           notice=lambda m: click.echo(f"capsim: warning: {m}", err=True))
    doc = result.document
    click.echo(f"{len(plan.runs)} runs ({len(result.ran)} simulated now, "
               f"{len(plan.runs) - len(result.ran)} already in the folder)")
    for p in doc.points:
        click.echo(point_line(p))
    for line in [*decided_notes(doc), *difference_lines(doc)]:
        click.echo(line)
    click.echo(f"report: {result.folder}/report.md")


@click.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@tier_option("Only this tier")
@click.option("--replications", type=click.IntRange(1, MAX_REPLICATIONS), default=1,
              show_default=True, help="A load meets the SLO only if every replication does.")
@click.option("--max-load", type=FiniteFloatRange(min=1, min_open=True, max=MAX_LOAD_MULTIPLE),
              default=100.0, show_default=True,
              help="Stop searching upwards at this multiple of today's load.")
@click.option("--tolerance", type=FiniteFloatRange(min=MIN_RELATIVE_TOLERANCE, max=1),
              default=0.02, show_default=True,
              help="Relative precision of the answer.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout (for scripts).")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress (on a terminal, a progress line on stderr).")
@executor_options
@_set_option
def headroom(scenario, tiers, replications, max_load, tolerance, as_json, quiet, jobs,
             dask_scheduler, dask_local, calibration, overrides):
    """For each tier, the largest multiple of SCENARIO's load that still meets its SLO,
    and what breaks first beyond it (bisection on a log scale).

    Names the cause of a broken failure rate (e.g. 402: the API is not in this tier's
    selection). On a terminal, progress goes to stderr (-q: none).
    SCENARIO defaults to the built-in one, as for capsim run."""
    from ..api import load_scenario
    from ..jobs.executors import make_executor
    from ..jobs.headroom import find_headroom
    from ..workload.size_estimate import check
    from .progress import Progress

    # Today's load first (each load tried is guarded again before it runs).
    calibrated = _calibrated(calibration, overrides)
    for w in check(load_scenario(scenario, tiers=list(tiers), overrides=calibrated),
                   jobs=jobs)[1]:
        click.echo(f"capsim: warning: {w}", err=True)
    with make_executor(jobs, dask_scheduler, dask_local) as executor, \
            Progress("headroom", None, "loads", quiet=quiet) as bar:
        found = find_headroom(scenario, tiers=list(tiers),
                              overrides=calibrated,
                              replications=replications, max_load=max_load,
                              tolerance=tolerance, executor=executor, progress=bar.step)
    if as_json:
        click.echo(json.dumps(found.to_dict(), indent=2, allow_nan=False))
        return
    click.echo(f"headroom of {found.scenario} (load multiples of today's load; "
               f"meets = {found.meets_means}; tolerance {tolerance:g}):")
    for entry in found.tiers:
        click.echo(entry.describe())


def _check_sizes(specs, jobs: int) -> None:
    """The run-size guard of `capsim run` on each point x variant of a sweep, before any
    run starts (each run is guarded again in its worker)."""
    from ..jobs.run_one import check_spec_size

    said = set()

    def warn(message: str) -> None:
        if message not in said:
            said.add(message)
            click.echo(f"capsim: warning: {message}", err=True)
    for spec in specs:
        check_spec_size(spec, jobs, warn)


def run_headroom_line(scenario, overrides, tier: str | None, seed: int | None,
                      executor=None, *, quiet: bool = False) -> str:
    """The sentence ``capsim run --headroom`` adds for the recommended tier (its loads
    run on ``executor``, e.g. ``capsim run --dask-local``'s, if given)."""
    from ..jobs.headroom import find_headroom
    from .progress import Progress

    if tier is None:
        return "headroom: no tier meets the SLO at today's load"
    extra = [*overrides, *([f"seed={seed}"] if seed is not None else [])]
    with Progress("headroom", None, "loads", quiet=quiet) as bar:
        found = find_headroom(scenario, tiers=[tier], overrides=extra, progress=bar.step,
                              executor=executor)
    return found.tiers[0].describe()
