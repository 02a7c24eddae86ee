"""What a run's report costs against its simulation: the share of one process's CPU that a
``capsim run`` of the default scenario (every tier, by default its 1 hour) spends in the
plots, in ``requests.parquet``, in the other tables and report files (report.html's
interactive charts apart), and in the simulation, which is the floor the others are
measured against; and the size of ``report.html``.

    python3 benchmarks/bench_report_cost.py [--duration 1h] [--repeat 3] [--before FILE]

The run is what ``capsim run -q`` does with ``--jobs 1``, in this one process: the demand
plan, each tier's :class:`~sim.model.engine.TierRun` (spool writing included), the
per-tier parts and the summary (:func:`sim.runner.run.tier_parts`,
:func:`sim.runner.run.assemble`), then :func:`sim.report.writer.write_report`, timed with
``time.process_time`` around the real functions it calls:
:meth:`~sim.runner.records.AttemptRecords.write_parquet` (``requests.parquet``),
:func:`sim.report.plots.write_all` (the PNGs), the Markdown and HTML renderers; the rest of
``write_report`` is ``windows.parquet``, ``streams.parquet``, ``summary.json`` and the
folder's swap. Each of ``--repeat`` runs is a fresh process (a run pays matplotlib's
first figure, its fonts and caches, as ``capsim run`` does); each phase counts with its
median over them, each share with the median of the runs' shares.

``--before FILE``: a result file this script wrote from the code before a change (run
from a checkout of it, ``--json FILE``); its figures are kept as ``before`` beside these,
so the two runs' shares can be read side by side (each share is of its own run's CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import add_json_option
from results import write as write_results

from sim.config.resolved import load
from sim.model.engine import TierRun
from sim.report import html, markdown, plots, writer
from sim.runner import records as records_module
from sim.runner.records import spool_folder
from sim.runner.run import assemble, tier_parts
from sim.workload.demand import build_plan

SIMULATION = "simulation (demand plan, tiers, spool)"
PARTS = "per-tier parts and summary"
REQUESTS = "requests.parquet"
PLOTS = "plots"
REPORT = "report.md, report.html"
CHARTS = "report.html's interactive charts (plotly specs, plotly.js)"
OTHER = "windows.parquet, streams.parquet, summary.json, folder"


class Clock:
    """CPU seconds per phase; :meth:`wrap` times a function each time it is called."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.cpu[name] = self.cpu.get(name, 0.0) + seconds

    def wrap(self, name: str, f):
        def timed(*a, **kw):
            start = time.process_time()
            try:
                return f(*a, **kw)
            finally:
                self.add(name, time.process_time() - start)
        return timed


def simulate(duration: str):
    """The run of ``capsim run -q --jobs 1`` up to its report: (output, CPU per phase)."""
    loaded = load(None, [f"duration={duration}"])
    start = time.process_time()
    plan = build_plan(loaded)
    folder = spool_folder()
    results = [TierRun(plan, tier, spool=str(Path(folder.name) / f"tier{i}")).run()
               for i, tier in enumerate(loaded.tiers)]
    middle = time.process_time()
    parts = [tier_parts(r, plan) for r in results]
    out = assemble(plan, results, folder, parts=parts)
    out.records_mode = "attempts"
    end = time.process_time()
    return out, {SIMULATION: middle - start, PARTS: end - middle}


def report_phases(out, where: Path) -> dict[str, float]:
    """CPU per phase of one ``write_report`` of ``out`` into ``where``."""
    clock = Clock()
    saved = [(records_module.AttemptRecords, "write_parquet", REQUESTS),
             (plots, "write_all", PLOTS), (markdown, "render", REPORT), (html, "render", REPORT)]
    try:  # the code before the interactive report has no charts: that phase is then 0
        from sim.report import interactive
    except ImportError:
        clock.add(CHARTS, 0.0)
    else:
        saved += [(interactive, name, CHARTS)
                  for name in ("charts", "chart_html", "plotly_js")]
    originals = [getattr(owner, attr) for owner, attr, _ in saved]
    for (owner, attr, name), f in zip(saved, originals, strict=True):
        setattr(owner, attr, clock.wrap(name, f))
    try:
        start = time.process_time()
        writer.write_report(out, where)
        total = time.process_time() - start
    finally:
        for (owner, attr, _), f in zip(saved, originals, strict=True):
            setattr(owner, attr, f)
    clock.add(OTHER, total - sum(clock.cpu.values()))
    return clock.cpu


def one_run(duration: str) -> dict:
    """One run and its report, in this process: attempts and CPU per phase."""
    out, cpu = simulate(duration)
    with tempfile.TemporaryDirectory() as tmp:
        cpu.update(report_phases(out, Path(tmp) / "report"))
        html_bytes = (Path(tmp) / "report" / "report.html").stat().st_size
    return {"tiers": len(out.summary.tiers),
            "attempts": sum(t.attempts for t in out.summary.tiers), "cpu": cpu,
            "report_html_bytes": html_bytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="1h")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", metavar="FILE",
                        help="figures this script wrote from the code before a change")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    add_json_option(parser, "report_cost")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.duration)))
        return
    load_before = round(os.getloadavg()[0], 2)
    runs = []
    for _ in range(args.repeat):
        done = subprocess.run([sys.executable, __file__, "--one", "--duration", args.duration],
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    phases = list(runs[0]["cpu"])
    cpu = {k: statistics.median(r["cpu"][k] for r in runs) for k in phases}
    share = {k: statistics.median(r["cpu"][k] / sum(r["cpu"].values()) for r in runs)
             for k in phases}
    ratio = {k: statistics.median(r["cpu"][k] / r["cpu"][SIMULATION] for r in runs)
             for k in phases}
    print(f"default scenario, {runs[0]['tiers']} tiers, duration {args.duration}: "
          f"{runs[0]['attempts']:,} attempts; CPU of one process, medians of {args.repeat} "
          f"runs; report.html {runs[0]['report_html_bytes']:,} bytes")
    for k in phases:
        print(f"  {k:56s} {cpu[k]:7.2f} s  {100 * share[k]:5.1f} %  "
              f"{ratio[k]:6.3f} x simulation")
    figures = {
        "duration": args.duration, "tiers": runs[0]["tiers"], "attempts": runs[0]["attempts"],
        "repeat": args.repeat, "report_html_bytes": runs[0]["report_html_bytes"],
        "phases_cpu_s": {k: round(v, 3) for k, v in cpu.items()},
        "share_of_run": {k: round(v, 4) for k, v in share.items()},
        "ratio_to_simulation": {k: round(v, 4) for k, v in ratio.items()},
        "runs_cpu_s": [{k: round(v, 3) for k, v in r["cpu"].items()} for r in runs],
    }
    if args.before:
        before = json.loads(Path(args.before).read_text(encoding="utf-8"))
        figures["before"] = {k: before[k] for k in ("command", "measured_at", "commit",
                                                    "machine")}
        figures["before"]["figures"] = {k: v for k, v in before["figures"].items()
                                        if k != "before"}
    write_results(args.json, "report_cost", figures, load_before=load_before,
                  hide=("--before",))


if __name__ == "__main__":
    main()
