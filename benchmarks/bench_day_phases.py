"""Where ``capsim run``'s CPU goes outside the simulation: CPU seconds per phase of a run
of the default scenario (every tier), all in this one process, tier after tier.

    python3 benchmarks/bench_day_phases.py [--duration 2h]

Phases, in the order a run does them:

* simulation: each tier's :class:`~sim.model.engine.TierRun` (spool writing included,
  and also shown on its own: ``ParquetSink.write``/``close``);
* per-tier parts: summary entry, latency table, frames (:func:`sim.runner.run.tier_parts`;
  with ``--jobs 2`` the workers do this);
* requests.parquet: :class:`sim.runner.records.RequestsWriter` over every tier (with ``--jobs 2``
  the parent does this while later tiers still simulate);
* plots, report.md/html, summary.json.

``time.process_time`` around each phase (this process only; nothing runs in
parallel here). With ``--jobs 2`` the simulation and per-tier parts are split over 2
workers, so the day run's wall time is about (simulation + parts) / 2, plus the last
tier's requests.parquet rows, plus plots and report. ``bench_day.py`` measures that wall
time itself.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

from results import add_json_option
from results import write as write_results

from sim.config.resolved import load
from sim.model import sinks
from sim.model.engine import TierRun
from sim.report import html, markdown, plots
from sim.runner.records import RequestsWriter, spool_folder
from sim.runner.run import assemble, tier_parts
from sim.workload.demand import build_plan


def _simulate(plan, tier, spool):
    return TierRun(plan, tier, spool=spool).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="2h")
    add_json_option(parser, "day_phases")
    args = parser.parse_args()
    spool_cpu = [0.0]
    write, close = sinks.ParquetSink.write, sinks.ParquetSink.close

    def timed(f):
        def wrapper(*a):
            start = time.process_time()
            try:
                return f(*a)
            finally:
                spool_cpu[0] += time.process_time() - start
        return wrapper

    sinks.ParquetSink.write, sinks.ParquetSink.close = timed(write), timed(close)
    loaded = load(None, [f"duration={args.duration}"])
    cpu: dict[str, float] = {}

    def phase(name, f):
        start = time.process_time()
        out = f()
        cpu[name] = cpu.get(name, 0.0) + time.process_time() - start
        return out

    plan = phase("demand plan", lambda: build_plan(loaded))
    folder = spool_folder()
    results, per_tier = [], {}
    for i, tier in enumerate(loaded.tiers):
        start = time.process_time()
        spool = str(Path(folder.name) / f"tier{i}")
        results.append(phase("simulation (spool included)",
                             partial(_simulate, plan, tier, spool)))
        per_tier[tier.name] = time.process_time() - start
    parts = phase("per-tier parts (summary, latency, frames)",
                  lambda: [tier_parts(r, plan) for r in results])
    out = phase("assemble (concatenate, summary.json document)",
                lambda: assemble(plan, results, folder, parts=parts))
    with tempfile.TemporaryDirectory() as tmp:
        names = [r.tier.name for r in results]

        def requests():
            w = RequestsWriter(Path(tmp) / "requests.parquet", plan, names)
            for i, r in enumerate(results):
                w.add_tier(i, r)
            return w.close()

        rows = phase("requests.parquet", requests)
        png = phase("plots", lambda: plots.write_all(
            Path(tmp), out.summary, out.minutes, out.windows, out.latencies, out.slots,
            out.refused_handshakes))
        phase("report.md, report.html, summary.json", lambda: (
            (Path(tmp) / "report.html").write_text(
                html.render(markdown.render(out.summary, png), Path(tmp))),
            (Path(tmp) / "summary.json").write_text(out.summary.to_json())))
    total = sum(cpu.values())
    print(f"default scenario, {len(results)} tiers, duration {args.duration}: {rows:,} "
          f"attempts; CPU seconds of one process")
    for name, s in cpu.items():
        print(f"  {name:48s} {s:8.2f} s  {100 * s / total:5.1f} %")
        if name.startswith("simulation"):
            print(f"    {'of which spool writing':46s} {spool_cpu[0]:8.2f} s")
    print(f"  {'total':48s} {total:8.2f} s")
    print("per tier (simulation):", ", ".join(f"{k} {v:.1f} s" for k, v in per_tier.items()))
    write_results(args.json, "day_phases", {
        "duration": args.duration, "tiers": len(results), "attempts": rows,
        "phases_cpu_s": {k: round(v, 2) for k, v in cpu.items()},
        "spool_writing_cpu_s": round(spool_cpu[0], 2), "total_cpu_s": round(total, 2),
    })


if __name__ == "__main__":
    main()
