"""``capsim sweep`` and ``capsim headroom``: what-ifs over many runs (sim/jobs/)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click


def executor_options(f):
    """--jobs / --dask-scheduler / --dask-local (at most one)."""
    f = click.option("--dask-local", type=click.IntRange(min=1), metavar="N",
                     help="Start a local Dask cluster of N worker processes for this job.")(f)
    f = click.option("--dask-scheduler", metavar="ADDRESS",
                     help="Run on an existing Dask cluster, e.g. tcp://host:8786 "
                          "(workers need capsim installed: pip install 'capsim[dask]').")(f)
    f = click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Runs in parallel in a local process pool.")(f)
    return f


def _set_option(f):
    return click.option("--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE",
                        help="Override a scenario value in every run (as capsim run --set).")(f)


class _Progress:
    """Runs done of total, elapsed and an estimate of what is left, on a terminal only."""

    def __init__(self) -> None:
        self.live = sys.stderr.isatty()
        self.started = time.monotonic()
        self.first: int | None = None

    def __call__(self, done: int, total: int) -> None:
        if not self.live:
            return
        if self.first is None:
            self.first = done
        elapsed = time.monotonic() - self.started
        ran = done - self.first
        left = "?" if ran == 0 else _clock(elapsed / ran * (total - done))
        click.echo(f"\rruns {done}/{total}  elapsed {_clock(elapsed)}  left ~{left}   ",
                   nl=done == total, err=True)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:d}:{s // 60 % 60:02d}:{s % 60:02d}"


@click.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--vary", multiple=True, metavar="KEY.PATH=V1,V2,...",
              help="Values of a scenario key (any --set path); several --vary give the "
                   "full factorial.")
@click.option("--replications", type=click.IntRange(min=1), default=1, show_default=True,
              help="Independent replications per point (seeds derived from the scenario's).")
@click.option("--tier", "tiers", multiple=True, metavar="NAME",
              help="Simulate only this tier (repeatable); default: the scenario's tiers.")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Sweep folder (default: reports/<scenario name>-sweep); rerun the same "
                   "command to resume.")
@click.option("--keep-records", is_flag=True,
              help="Also write each run's Parquet tables under DIR/records/<run>/.")
@click.option("--no-variants", is_flag=True, help="Ignore the scenario's [[variants]].")
@executor_options
@_set_option
def sweep(scenario, vary, replications, tiers, out, keep_records, no_variants, jobs,
          dask_scheduler, dask_local, overrides):
    """Run SCENARIO over a grid of values (--vary), its [[variants]] and replications.

    Writes points.parquet (one row per point x variant x tier x replication),
    sweep.json (means with 95 % intervals, the cheapest tier meeting the SLO per point,
    variants against the base), report.md and report.html. Each run is kept in
    DIR/runs/ as it finishes: the same command again runs only what is missing.
    """
    from ..jobs.executors import make_executor
    from ..jobs.sweep import run_sweep
    from ..jobs.sweep_plan import plan_sweep
    from ..jobs.sweep_report import difference_lines

    plan = plan_sweep(scenario, vary=list(vary), replications=replications,
                      tiers=list(tiers), overrides=list(overrides), variants=not no_variants)
    out_dir = Path(out) if out else Path("reports") / f"{plan.scenario_name}-sweep"
    with make_executor(jobs, dask_scheduler, dask_local) as executor:
        result = run_sweep(plan, out_dir, executor, keep_records=keep_records,
                           progress=_Progress())
    doc = result.document
    click.echo(f"{len(plan.runs)} runs ({len(result.ran)} simulated now, "
               f"{len(plan.runs) - len(result.ran)} already in the folder)")
    for p in doc.points:
        label = ", ".join(f"{k}={v}" for k, v in p.values.items()) or "scenario"
        click.echo(f"{label} [{p.variant}]: cheapest tier meeting the SLO: "
                   f"{p.cheapest_meeting_slo or 'none'}")
    for line in difference_lines(doc):
        click.echo(line)
    click.echo(f"report: {result.folder}/report.md")


@click.command()
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--tier", "tiers", multiple=True, metavar="NAME",
              help="Only this tier (repeatable); default: the scenario's tiers.")
@click.option("--replications", type=click.IntRange(min=1), default=1, show_default=True,
              help="A load meets the SLO only if every replication does.")
@click.option("--max-load", type=click.FloatRange(min=1, min_open=True), default=100.0,
              show_default=True, help="Stop searching upwards at this multiple of today's load.")
@click.option("--tolerance", type=click.FloatRange(min=0, min_open=True), default=0.02,
              show_default=True, help="Relative precision of the answer.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout (for scripts).")
@executor_options
@_set_option
def headroom(scenario, tiers, replications, max_load, tolerance, as_json, jobs,
             dask_scheduler, dask_local, overrides):
    """For each tier, the largest multiple of SCENARIO's load that still meets its SLO,
    and what breaks first beyond it (bisection on a log scale)."""
    from ..jobs.executors import make_executor
    from ..jobs.headroom import find_headroom

    with make_executor(jobs, dask_scheduler, dask_local) as executor:
        found = find_headroom(scenario, tiers=list(tiers), overrides=list(overrides),
                              replications=replications, max_load=max_load,
                              tolerance=tolerance, executor=executor)
    if as_json:
        click.echo(json.dumps(found.to_dict(), indent=2, allow_nan=False))
        return
    click.echo(f"headroom of {found.scenario} (load multiples of today's load; "
               f"meets = {found.meets_means}; tolerance {tolerance:g}):")
    for entry in found.tiers:
        click.echo(entry.describe())


def run_headroom_line(scenario, overrides, tier: str | None, seed: int | None) -> str:
    """The sentence ``capsim run --headroom`` adds for the recommended tier."""
    from ..jobs.headroom import find_headroom

    if tier is None:
        return "headroom: no tier meets the SLO at today's load"
    extra = [*overrides, *([f"seed={seed}"] if seed is not None else [])]
    return find_headroom(scenario, tiers=[tier], overrides=extra).tiers[0].describe()
