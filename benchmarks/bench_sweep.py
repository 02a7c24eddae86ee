"""Sweep throughput (runs per minute) sequentially, on a 2-process pool and on a 2-worker
Dask LocalCluster, and the scaling ratio against 1 process, measured in the same run.

    python3 benchmarks/bench_sweep.py [--scenario PATH] [--runs N] [--duration S]

Each configuration runs the same sweep (``--runs`` replications of the scenario, every
tier, ``--set duration=S``) into a fresh folder; wall-clock time covers the whole sweep
(runs, tables and report), the LocalCluster's start-up excluded. A ratio near 2 means
the runs scale; the ceiling is the machine's free cores (``os.cpu_count()`` is printed,
but other work on the machine counts too).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from results import add_json_option, write

from sim.jobs.executors import DaskExecutor, LocalPoolExecutor, SequentialExecutor
from sim.jobs.sweep import run_sweep
from sim.jobs.sweep_plan import plan_sweep

ROOT = Path(__file__).resolve().parent.parent


def timed(plan, executor) -> float:
    """Runs per minute of ``plan`` on ``executor`` (a fresh folder each time)."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_sweep(plan, Path(tmp) / "out", executor)
        elapsed = time.perf_counter() - start
    return len(plan.runs) / elapsed * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(ROOT / "workloads" / "searcher.toml"))
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--duration", type=float, default=600.0)
    add_json_option(parser, "sweep")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    plan = plan_sweep(args.scenario, replications=args.runs, variants=False,
                      overrides=[f"duration={args.duration:g}"])
    print(f"scenario {args.scenario}, {len(plan.runs)} runs x {len(plan.tiers)} tiers, "
          f"duration {args.duration:g} s, cpu_count {os.cpu_count()}")
    one = timed(plan, SequentialExecutor())
    print(f"1 process:            {one:7.1f} runs/min")
    with LocalPoolExecutor(2) as pool:
        two = timed(plan, pool)
    print(f"2 processes (pool):   {two:7.1f} runs/min   x{two / one:.2f}")
    with DaskExecutor(local_workers=2) as dask:
        dsk = timed(plan, dask)
    print(f"Dask LocalCluster(2): {dsk:7.1f} runs/min   x{dsk / one:.2f}")
    write(args.json, "sweep", {
        "scenario": Path(args.scenario).name, "runs": len(plan.runs),
        "tiers": len(plan.tiers), "duration_s": args.duration,
        "runs_per_min_1_process": round(one, 2), "runs_per_min_pool_2": round(two, 2),
        "runs_per_min_dask_local_2": round(dsk, 2),
        "ratio_pool_2": round(two / one, 3), "ratio_dask_local_2": round(dsk / one, 3),
    }, load_before=load_before)


if __name__ == "__main__":
    main()
