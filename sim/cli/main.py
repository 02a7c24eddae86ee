"""The ``capsim`` command line: a thin layer over the library.

A user's mistake (a :class:`~sim.core.errors.CapsimError`) prints one line on stderr and
exits with code 2; nothing is written.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import click

from ..core.version import __version__
from .options import (
    dask_options,
    jobs_option,
    report_errors,
    set_option,
    size_options,
    tier_option,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..config.resolved import LoadedScenario


class LazyCommand(NamedTuple):
    """A command defined in another module, imported only when it is run (or its own
    help is asked for); ``help`` is what ``capsim --help`` lists for it, kept here so the
    listing imports nothing (a test checks it against the command)."""

    module: str
    attribute: str
    help: str
    short: bool = False  # ``help`` is the command's short_help (else its help's start)

    def load(self) -> click.Command:
        """The command object itself."""
        return getattr(importlib.import_module(self.module), self.attribute)

    def stand_in(self, name: str) -> click.Command:
        """A command that lists like the real one in ``capsim --help``."""
        return click.Command(name, help=self.help, short_help=self.help if self.short else None)


LAZY_COMMANDS: dict[str, LazyCommand] = {
    "advise": LazyCommand("sim.cli.advise", "advise",
                          "For each tier cheaper than the recommended one, the least change to "
                          "the client that makes it meet the SLO, with the dollars per month it "
                          "saves."),
    "baseline": LazyCommand("sim.cli.regression", "baseline",
                            "Save or update the baseline a scenario is checked against."),
    "calibrate": LazyCommand("sim.cli.calibrate", "calibrate_command",
                             "Replay a recorded trace, compare outcomes, fit prices.", short=True),
    "check": LazyCommand("sim.cli.regression", "check",
                         "Run SCENARIO as its baseline was run and compare: exit 1 on a "
                         "regression."),
    "ci": LazyCommand("sim.cli.ci", "ci", "Set up the capacity gate in your repository's CI."),
    "compare": LazyCommand("sim.cli.regression", "compare",
                           "Compare B with A (report folders, summary.json files or baselines): "
                           "exit 1 when B regressed, with the same reports as check."),
    "drive": LazyCommand("sim.cli.live", "drive",
                         "Replay SCENARIO's demand against a running emulator with real HTTP/2 "
                         "and websocket clients, and write every attempt (status, latency) as a "
                         "canonical trace."),
    "export": LazyCommand("sim.cli.export", "export",
                          "Export a run's report folder as CSV: tiers.csv (one row per tier, "
                          "every figure of summary.json as a column), windows.csv (one row "
                          "per tier x 12-second window, from windows.parquet) and "
                          "accounts.csv (one row per tier x account, for [[accounts]])."),
    "headroom": LazyCommand("sim.cli.sweep", "headroom",
                            "For each tier, the largest multiple of SCENARIO's load that still "
                            "meets its SLO, and what breaks first beyond it (bisection on a log "
                            "scale)."),
    "init": LazyCommand("sim.cli.init", "init",
                        "Write a new scenario file SCENARIO (default: scenario.toml)."),
    "schema": LazyCommand("sim.cli.schema", "schema",
                          "Print the scenario file's JSON Schema (draft 2020-12) on stdout."),
    "serve": LazyCommand("sim.cli.live", "serve",
                         "Emulate the service for SCENARIO's account (default: the built-in "
                         "scenario)."),
    "sweep": LazyCommand("sim.cli.sweep", "sweep",
                         "Run SCENARIO over a grid of values (--vary), its [[variants]] and "
                         "replications."),
    "trace": LazyCommand("sim.cli.trace", "trace",
                         "Import recorded traffic into the canonical trace table and summarise "
                         "it."),
}
"""Subcommands whose modules load only when used, so ``capsim tiers``, ``capsim validate``
and ``capsim --help`` do not pay for asyncio, the regression gate or the trace importers.
A new command in its own module is registered here with one line."""


class CapsimGroup(click.Group):
    """A click group that reports CapsimError as one line, exit code 2, no traceback, and
    imports the :data:`LAZY_COMMANDS` on first use."""

    _listing = False

    def list_commands(self, ctx):
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx, name):
        if name not in self.commands and name in LAZY_COMMANDS:
            if self._listing:
                return LAZY_COMMANDS[name].stand_in(name)
            self.add_command(LAZY_COMMANDS[name].load(), name)
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        # The listing needs only each command's short help: stand-ins keep it import-free.
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def invoke(self, ctx):
        with report_errors():
            return super().invoke(ctx)

    def make_context(self, info_name, args, parent=None, **extra):
        with report_errors():  # `capsim --bogus`: the same one-line error
            return super().make_context(info_name, args, parent=parent, **extra)


@click.group(cls=CapsimGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="capsim")
def main() -> None:
    """capsim: capacity simulator for the CU-metered Search, RPC and Streams APIs.

    Simulates an account's traffic against every subscription tier and reports
    throttling, latency, CU and cost per tier, with the cheapest tier that meets your SLO.
    """


def _check_size(loaded: LoadedScenario, max_requests: int | None, jobs: int = 1,
                replications: int = 1, keep_rows: bool = True):
    from ..workload.size_estimate import check

    size, warnings = check(loaded, max_requests=max_requests, jobs=jobs,
                           replications=replications, keep_rows=keep_rows)
    for w in warnings:
        click.echo(f"capsim: warning: {w}", err=True)
    return size


def _load(scenario: str | None, overrides: tuple[str, ...], seed: int | None = None,
          tiers: tuple[str, ...] = ()) -> LoadedScenario:
    from ..config.selection import load_scenario

    return load_scenario(scenario, tiers=tiers, seed=seed, overrides=overrides)


@main.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@tier_option()
@click.option("--seed", type=click.IntRange(min=0), help="Override the scenario's seed.")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Report folder (default: reports/<scenario name>).")
@jobs_option()
@dask_options("the tiers (and replications)")
@click.option("--quiet", "-q", is_flag=True, help="No progress, no table.")
@click.option("--headroom", "with_headroom", is_flag=True,
              help="Also find how far the load may grow before the recommended tier "
                   "stops meeting the SLO (see capsim headroom).")
@click.option("--records", type=click.Choice(["attempts", "windows", "none"]),
              default="attempts", show_default=True,
              help="Per-row tables written: attempts (requests.parquet and "
                   "windows.parquet), windows (windows.parquet only) or none.")
@click.option("--robust", is_flag=True,
              help="Also simulate every tier at the least and the most costly prices of "
                   "the ranges of every price the traffic pays (method prices, sizing, "
                   "websocket, each tier's daily allowance; monthly prices re-rank) "
                   "([price_ranges], a calibration's intervals, else the documented "
                   "defaults) and each price alone across its range; robust only when "
                   "every price paid was varied and none changes the answer. The report "
                   "gets a 'How sure' section.")
@click.option("--calibration", type=click.Path(), metavar="DIR",
              help="Take prices, window phase, refund rule and price ranges from a "
                   "calibration folder (capsim calibrate) or its calibration.json; "
                   "implies --robust. --set still wins.")
@click.option("--replications", type=int, default=1, show_default=True, metavar="N",
              help="Also run N-1 more replications (1 to 100; the seeds of capsim "
                   "sweep's replications, every tier on the same demand within each): "
                   "per tier, the share meeting the SLO and 95 % intervals, and how "
                   "often the recommendation held. The recommendation, tables and "
                   "records stay replication 0's, the plain run's.")
@click.option("--engine", type=click.Choice(["auto", "simpy", "compiled"]), default="auto",
              show_default=True,
              help="auto: the compiled (numba) engine where it covers every feature of the "
                   "scenario (websockets included), else the SimPy "
                   "model, saying why on stderr; both write the same rows. compiled on a "
                   "scenario it does not cover is an error.")
@set_option()
@size_options
def run(scenario, tiers, seed, out, jobs, dask_scheduler, dask_local, quiet, with_headroom,
        records, robust, calibration, replications, engine, overrides, max_requests):
    """Simulate SCENARIO (default: the built-in one) against every tier and write a report.

    Writes summary.json, requests.parquet, windows.parquet, report.md, report.html and
    PNG plots into --out (fewer tables with --records), replacing the folder whole only
    once everything is written.
    --out must be missing, empty or a capsim report; one run at a time per folder.
    """
    from ..api import run as run_scenario
    from ..compiled.choice import choose_engine
    from ..report.folder import ReportFolder
    from ..report.how_sure import verdict_line
    from ..report.markdown import margin_sentence, p99_notes, tier_table
    from ..report.replications import stdout_lines
    from ..report.writer import write_report
    from ..results.decided import assumption_line, verdict_notes
    from ..runner.replications import check_replications
    from .progress import RunProgress

    check_replications(replications)

    cal = None
    if calibration:
        from ..calibration.use import read_calibration

        cal = read_calibration(calibration)
        overrides = (*cal.overrides, *overrides)
        robust = True
    loaded = _load(scenario, overrides, seed, tiers)
    keep_rows = records == "attempts"  # else a tier's rows go once it is summarised
    # (a remote cluster may run every tier at once into the shared TMPDIR: count them all)
    _check_size(loaded, max_requests, dask_local or jobs, replications,
                keep_rows or bool(dask_scheduler))
    chosen = choose_engine(loaded, engine)
    if not quiet:
        click.echo(f"engine: {chosen.engine} ({chosen.reason})", err=True)
    sc = loaded.scenario
    out_dir = Path(out) if out else Path("reports") / sc.name
    started = time.perf_counter()
    progress = RunProgress(loaded.tiers, sc.duration_s, quiet=quiet)
    # Claimed and locked before simulating: a folder that is not a report, or one another
    # run is writing, fails now rather than after the run.
    with ReportFolder(out_dir) as claimed, _executor(jobs, dask_scheduler, dask_local) as pool:
        try:
            result = run_scenario(loaded, jobs=jobs, progress=progress.tier_progress,
                                  records=records, replications=replications,
                                  engine=chosen.engine, keep_rows=keep_rows,
                                  replication_progress=progress.replication_progress,
                                  executor=pool)
        finally:
            progress.close()
        with result:  # its spool files go once the report is written
            if robust:
                result.summary = _robust_summary(loaded, result.summary, cal, jobs, quiet)
            headroom = None
            if with_headroom:  # before the report is written: the report gives it too
                from .sweep import run_headroom_line

                headroom = run_headroom_line(scenario, overrides,
                                             result.summary.recommended.tier, seed, pool,
                                             quiet=quiet)
                rec = result.summary.recommended.model_copy(update={"headroom": headroom})
                result.summary = result.summary.model_copy(update={"recommended": rec})
            folder = write_report(result, out_dir, claimed)
    if quiet:
        return
    click.echo("")
    for row in tier_table(result.summary.tiers):
        click.echo(row)
    for note in [*p99_notes(result.summary.tiers), *verdict_notes(result.summary.tiers)]:
        click.echo(note)
    for note in result.summary.notes:  # the notes that warn (replayed traffic's scaling)
        if note.startswith("warning: "):
            click.echo(note)
    rec = result.summary.recommended
    click.echo(f"\nrecommended tier: {rec.tier or 'none'} ({rec.reason})")
    if (assumed := assumption_line(result.summary)) is not None:
        click.echo(assumed)
    if rec.tier is not None:
        click.echo(f"margin: {margin_sentence(result.summary.tier(rec.tier))}")
    for line in stdout_lines(result.summary):
        click.echo(line)
    if rec.robust is not None:
        click.echo(f"at the least costly prices: {rec.at_low_prices or 'none'}; at the most "
                   f"costly: {rec.at_high_prices or 'none'}: "
                   + verdict_line(rec))
    if headroom is not None:
        click.echo(headroom)
    click.echo(f"report: {folder}/report.md  ({time.perf_counter() - started:.1f} s)")


def _executor(jobs: int, dask_scheduler: str | None, dask_local: int | None):
    """The Dask executor ``capsim run`` was asked for (a context manager), else a null
    context: tiers then run here or in the run's own pool of ``jobs`` processes."""
    from contextlib import nullcontext

    if dask_scheduler is None and dask_local is None:
        return nullcontext()
    from ..jobs.executors import make_executor

    return make_executor(jobs, dask_scheduler, dask_local)


def _robust_summary(loaded: LoadedScenario, summary, cal, jobs: int, quiet: bool):
    """``summary`` with the recommendation across the prices' ranges (--robust)."""
    from ..config.price_ranges import effective_ranges
    from ..config.used_prices import prices_used_by, set_by_scenario
    from ..jobs.robust import evaluate, with_robustness
    from ..workload.replay_source import methods_at_recorded_cu

    ranges = effective_ranges(loaded.pricing, set_by_scenario(loaded), loaded.price_ranges,
                              None if cal is None else cal.ranges)

    from .progress import Progress

    with Progress("robust: prices at their range ends", None, "runs", quiet=quiet) as bar:
        used = prices_used_by(summary, loaded, methods_at_recorded_cu(loaded))
        rob = evaluate(loaded, summary, ranges, used, jobs=jobs, progress=bar.step)
    return with_robustness(summary, rob)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def tiers(as_json):
    """Print the tier catalog: CU per 12 s, websocket cap, APIs, assumed allowance and price."""
    import json

    from ..config.pricing import Pricing, default_pricing_table
    from ..config.tiers import CATALOG

    pricing = Pricing.model_validate(default_pricing_table())
    rows = []
    for t in CATALOG:
        p = pricing.for_tier(t)
        rows.append({"tier": t.name, "apis": sorted(t.apis), "cu_per_window": t.cu_per_window,
                     "ws_cap": t.ws_cap, "daily_allowance_cu": p.daily_allowance_cu,
                     "monthly_usd": p.monthly_usd})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from tabulate import tabulate

    table = [[r["tier"], r["cu_per_window"], r["ws_cap"], "+".join(r["apis"]),
              r["daily_allowance_cu"], r["monthly_usd"]] for r in rows]
    click.echo(tabulate(table, ["tier", "CU/12s", "ws cap", "APIs", "daily CU*", "$/month*"],
                        tablefmt="simple", intfmt=",", floatfmt=",.0f"))
    click.echo("* assumptions (not in the spec): see sim/data/pricing.toml")


@main.command()
@click.argument("scenario", required=False, type=click.Path(dir_okay=False))
@set_option()
@size_options
def validate(scenario, overrides, max_requests):
    """Check a scenario file (default: the built-in one) without running it (exit code 2
    and one message if invalid, or if the run would not fit in memory, on the temporary
    disk its spools need, or in --max-requests)."""
    loaded = _load(scenario, overrides)
    size = _check_size(loaded, max_requests)
    sc = loaded.scenario
    unknown = sorted({i for i, s in enumerate(sc.sources) if sc.account_of_key(s.key) is None})
    click.echo(f"{scenario or '<built-in default scenario>'}: ok — scenario {sc.name!r}, "
               f"{len(sc.sources)} source(s), "
               f"{len(loaded.tiers)} tier(s), {sc.duration_s:,.0f} s simulated; "
               f"{size.describe()}")
    for i in unknown:
        click.echo(f"warning: sources[{i}].key is not a key of any account: "
                   "its requests will get 401", err=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
