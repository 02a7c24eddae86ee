"""``capsim advise``: the least client change that lets a cheaper tier meet the SLO
(:mod:`sim.advisor`)."""

from __future__ import annotations

import json

import click

from ..core.limits import MAX_REPLICATIONS, MIN_RELATIVE_TOLERANCE
from .options import FiniteFloatRange, tier_option
from .sweep import _calibrated, _set_option, executor_options


@click.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@tier_option()
@click.option("--replications", type=click.IntRange(1, MAX_REPLICATIONS), default=3,
              show_default=True,
              help="Replications a change found must meet the SLO in (common random "
                   "numbers: the seeds of capsim sweep).")
@click.option("--budget", type=click.IntRange(min=1), default=400, show_default=True,
              metavar="RUNS", help="At most this many model runs (one tier simulated once).")
@click.option("--tolerance", type=FiniteFloatRange(min=MIN_RELATIVE_TOLERANCE, max=1),
              default=0.02, show_default=True,
              help="Relative precision of a continuous change (the pacing rate).")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Keep each run's summary under DIR/runs/ and write advice.json, "
                   "report.md and advice.png there; the same command again resumes.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout (for scripts).")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress (on a terminal: a bar of the model runs and one line per "
                   "setting tried, on stderr).")
@executor_options
@_set_option
def advise(scenario, tiers, replications, budget, tolerance, out, as_json, quiet, jobs,
           dask_scheduler, dask_local, calibration, overrides):
    """For each tier cheaper than the recommended one, the least change to the client
    that makes it meet the SLO, with the dollars per month it saves.

    Tries a catalogue of client changes (pacing, retry policy, retry budget, fewer
    attempts, bursts off window boundaries, connection reuse, fewer websockets, caching
    a share of one method's calls), each as a diff of the scenario, skipping those
    that cannot alter the outcome (with the reason). Prints, per tier, the change as a
    TOML snippet to paste, what it saves and what it costs the client, or the closest
    change when none is enough. SCENARIO defaults to the built-in one."""
    from ..advisor import advise as find_advice
    from ..api import load_scenario
    from ..jobs.executors import make_executor
    from ..workload.size_estimate import check
    from .progress import Progress, shown

    calibrated = _calibrated(calibration, overrides)
    for w in check(load_scenario(scenario, tiers=list(tiers), overrides=calibrated),
                   jobs=jobs)[1]:
        click.echo(f"capsim: warning: {w}", err=True)
    with make_executor(jobs, dask_scheduler, dask_local) as executor, \
            Progress("model runs", budget, "runs", quiet=quiet) as bar:
        found = find_advice(scenario, tiers=list(tiers), overrides=calibrated,
                            replications=replications, budget=budget, tolerance=tolerance,
                            executor=executor, store=out,
                            progress=bar.write if shown(quiet) else None,
                            on_run=lambda runs, _budget: bar.to(runs))
        bar.to(found.runs, found.runs)  # the budget is a bound: the search ends sooner
    if out:
        from ..advisor.report import write_advice

        write_advice(found, out)
    if as_json:
        click.echo(json.dumps(found.to_dict(), indent=2, allow_nan=False))
        return
    for line in found.lines():
        click.echo(line)
    if out:
        click.echo(f"report: {out}/report.md")
