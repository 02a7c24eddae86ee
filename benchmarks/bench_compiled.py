"""The compiled engine against a bare SimPy loop and the SimPy model, same run; its
compile and cache-load times.

    python3 benchmarks/bench_compiled.py [--duration S] [--tier NAME]... [--repeat N]
        [--no-compile-time]

Demand: the default scenario's open-loop sources (the issue's figure; its closed-loop
workers and websocket clients left out), every tier unless ``--tier``. The whole default
scenario (workers and websocket clients included) is measured too, on the engine
``--engine auto`` chooses for it (printed and written, with the reason: a scenario the
compiled engine does not cover runs on SimPy) and on the SimPy model, each tier's
demand as ``capsim run`` hands it over: the open-loop demand drawn once per repeat into a
spool (``sim.runner.run.shared_plan``; that CPU added to both engines' totals) and read
back by every tier, the workers' requests drawn by each run; attempts counted with the
websocket handshakes (as ``bench_engine.py`` counts them).
In each repeat and for each tier, in turn: the bare SimPy loop of ``bench_engine.py``
over the same arrival times, the SimPy model (``TierRun``) and the compiled engine
(``CompiledTierRun``) on the same demand, drawn before the clock starts and handed in
(the demand draw is the same Python code for both, measured on its own), and the
compiled engine again drawing its demand as a run does. Both engines' attempt counts
must agree (their rows are held equal by tests/validation/test_compiled_engine.py).

Compile and cache-load times: a fresh process compiles the engine into an empty numba
cache folder and runs a 10-second scenario; a second fresh process does the same from
that cache (CPU and wall seconds of each whole process). Memory against run length
(``--memory-durations``, seconds, default 16740,669600: about 0.5 and 20 million attempt
rows of the default scenario's open-loop demand, the issue's two points): one tier's
compiled run, rows spooled, in a
fresh process per duration; its peak RSS and attempt rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_engine import bare_loop
from results import add_json_option, write

from sim.compiled.choice import choose_engine, tier_run_class
from sim.compiled.engine import CompiledTierRun
from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.model.engine import TierRun
from sim.runner.run import shared_plan
from sim.workload.demand import build_plan

ROOT = Path(__file__).resolve().parents[1]


def open_loop_default(duration: float):
    """The default scenario without its closed-loop workers and websocket clients."""
    loaded = load(None, [f"duration={duration}", "streams=[]"])
    sc = loaded.scenario
    sc = sc.model_copy(update={"sources": [s for s in sc.sources if s.workers is None]})
    return replace(loaded, scenario=sc)


def handed_in(plan, blocks):
    """``plan`` with its demand blocks already drawn (each run gets the same list)."""
    plan = replace(plan)
    plan.demand_blocks = lambda *a, **k: iter(blocks)
    return plan


def cpu_of(engine, plan, tier) -> tuple[float, int]:
    start = time.process_time()
    result = engine(plan, tier).run()
    cpu = time.process_time() - start
    return cpu, len(result.attempt_sink.read(["outcome"])["outcome"])


COMPILE_CHILD = """
import resource, time, sys
t0 = time.perf_counter()
from sim.config.resolved import load
from sim.workload.demand import build_plan
from sim.compiled.engine import CompiledTierRun
loaded = load(None, ["duration=10", "streams=[]"])
sc = loaded.scenario
sc = sc.model_copy(update={"sources": [s for s in sc.sources if s.workers is None]})
from dataclasses import replace
loaded = replace(loaded, scenario=sc)
CompiledTierRun(build_plan(loaded), loaded.tiers[0]).run()
r = resource.getrusage(resource.RUSAGE_SELF)
print("TIMES", r.ru_utime + r.ru_stime, time.perf_counter() - t0)
"""


MEMORY_CHILD = """
import resource, sys, tempfile
from dataclasses import replace
import pyarrow.parquet as pq
from sim.config.resolved import load
from sim.workload.demand import build_plan
from sim.compiled.engine import CompiledTierRun
loaded = load(None, ["duration=" + sys.argv[1], "streams=[]"])
sc = loaded.scenario
sc = sc.model_copy(update={"sources": [s for s in sc.sources if s.workers is None]})
loaded = replace(loaded, scenario=sc)
with tempfile.TemporaryDirectory() as d:
    CompiledTierRun(build_plan(loaded), loaded.tiers[0], spool=d + "/x").run()
    rows = pq.ParquetFile(d + "/x-attempts.parquet").metadata.num_rows
print("PEAK", rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def memory_points(durations: list[str]) -> list[dict]:
    """Peak RSS and attempt rows of one tier's compiled run per duration."""
    points = []
    for duration in durations:
        done = subprocess.run([sys.executable, "-c", MEMORY_CHILD, duration], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, check=True)
        rows, peak = (int(x) for x in done.stdout.split("PEAK")[-1].split())
        points.append({"duration": duration, "rows": rows,
                       "peak_mib": round(peak / 2**20, 1)})
    return points


def compile_times() -> dict[str, float]:
    """CPU and wall seconds of a fresh process compiling the engine, then of one loading
    it from the cache the first wrote."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        for label in ("compile", "cached"):
            done = subprocess.run([sys.executable, "-c", COMPILE_CHILD], env=env, cwd=ROOT,
                                  capture_output=True, text=True, check=True)
            cpu, wall = (float(x) for x in done.stdout.split("TIMES")[-1].split())
            out[f"{label}_cpu_s"], out[f"{label}_wall_s"] = round(cpu, 2), round(wall, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3600.0)
    parser.add_argument("--tier", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-compile-time", action="store_true")
    parser.add_argument("--memory-durations", default="16740,669600",
                        help="durations of the memory points ('' for none)")
    add_json_option(parser, "compiled")
    args = parser.parse_args()
    loaded = open_loop_default(args.duration)
    whole = load(None, [f"duration={args.duration}"])
    chosen = choose_engine(whole, "auto")
    whole_engine = tier_run_class(chosen.engine)
    tiers = [find_tier(t, loaded.tiers) for t in args.tier] or list(loaded.tiers)
    plan = build_plan(loaded)
    start = time.process_time()
    blocks = list(plan.demand_blocks())
    draw_cpu = time.process_time() - start
    times = np.concatenate([b.t for b in blocks]).tolist()
    CompiledTierRun(handed_in(plan, blocks[:1]), tiers[0]).run()  # load from the cache
    whole_engine(build_plan(load(None, ["duration=60"])), tiers[0]).run()  # (and its ws side)
    load_before = os.getloadavg()
    rows = []
    for _ in range(args.repeat):
        spool = tempfile.TemporaryDirectory()
        start = time.process_time()
        whole_plan = shared_plan(build_plan(whole), spool.name, len(tiers))
        shared_draw = time.process_time() - start
        cpu = [0.0, 0.0, 0.0, 0.0, shared_draw, shared_draw]
        n_model = n_comp = n_whole = n_whole_model = 0
        for tier in tiers:
            cpu[0] += bare_loop(times)
            c, n = cpu_of(TierRun, handed_in(plan, blocks), tier)
            cpu[1], n_model = cpu[1] + c, n_model + n
            c, n = cpu_of(CompiledTierRun, handed_in(plan, blocks), tier)
            cpu[2], n_comp = cpu[2] + c, n_comp + n
            c, _ = cpu_of(CompiledTierRun, build_plan(loaded), tier)
            cpu[3] += c
            c, n = cpu_of(whole_engine, whole_plan, tier)
            cpu[4], n_whole = cpu[4] + c, n_whole + n
            c, n = cpu_of(TierRun, whole_plan, tier)
            cpu[5], n_whole_model = cpu[5] + c, n_whole_model + n
        assert n_model == n_comp, (n_model, n_comp)
        assert n_whole == n_whole_model, (n_whole, n_whole_model)
        spool.cleanup()
        k = len(tiers) * len(times)
        bare, model, comp, comp_draw, whole_rate, whole_model = (
            k / cpu[0], n_model / cpu[1], n_comp / cpu[2], n_comp / cpu[3],
            n_whole / cpu[4], n_whole_model / cpu[5])
        rows.append((bare, model, comp, comp_draw, model / bare, comp / bare,
                     comp_draw / bare, comp / model, whole_rate, whole_model,
                     whole_rate / bare, whole_model / bare, whole_rate / whole_model))
    med = [statistics.median(c) for c in zip(*rows, strict=True)]
    load_after = os.getloadavg()
    (bare, model, comp, comp_draw, r_model, r_comp, r_comp_draw, r_vs_model, whole_rate,
     whole_model, r_whole, r_whole_model, r_whole_vs_model) = med
    print(f"default scenario's open-loop demand, {args.duration:.0f} s, {len(tiers)} tier(s), "
          f"{len(times):,} requests; median of {args.repeat}; load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after (a shared machine)")
    print(f"bare SimPy loop               : {bare:12,.0f} requests / CPU-s")
    print(f"SimPy model                   : {model:12,.0f} attempts / CPU-s  ratio {r_model:6.2f}")
    print(f"compiled, demand handed in    : {comp:12,.0f} attempts / CPU-s  ratio {r_comp:6.2f}"
          f"  ({r_vs_model:.2f}x the model)")
    print(f"compiled, drawing its demand  : {comp_draw:12,.0f} attempts / CPU-s  ratio "
          f"{r_comp_draw:6.2f}")
    print(f"demand draw alone             : {draw_cpu:.3f} CPU-s for {len(times):,} requests")
    print(f"whole default scenario (workers and websockets), --engine auto ran "
          f"{chosen.engine} ({chosen.reason}):")
    print(f"  --engine auto ({chosen.engine:8s}): {whole_rate:12,.0f} attempts / CPU-s  ratio "
          f"{r_whole:6.2f}  ({r_whole_vs_model:.2f}x the model)")
    print(f"  SimPy model                 : {whole_model:12,.0f} attempts / CPU-s  ratio "
          f"{r_whole_model:6.2f}")
    figures = {
        "scenario": "default, open-loop sources only", "duration_s": args.duration,
        "tiers": len(tiers), "repeat": args.repeat, "requests": len(times),
        "attempts": n_comp,
        "bare_requests_per_cpu_s": round(bare), "model_attempts_per_cpu_s": round(model),
        "compiled_attempts_per_cpu_s": round(comp),
        "compiled_with_draw_attempts_per_cpu_s": round(comp_draw),
        "ratio_model": round(r_model, 3), "ratio_compiled": round(r_comp, 3),
        "ratio_compiled_with_draw": round(r_comp_draw, 3),
        "compiled_over_model": round(r_vs_model, 3), "demand_draw_cpu_s": round(draw_cpu, 3),
        "whole_engine": chosen.engine, "whole_engine_reason": chosen.reason,
        "whole_attempts": n_whole, "whole_attempts_per_cpu_s": round(whole_rate),
        "whole_model_attempts_per_cpu_s": round(whole_model),
        "ratio_whole": round(r_whole, 3), "ratio_whole_model": round(r_whole_model, 3),
        "whole_over_model": round(r_whole_vs_model, 3),
    }
    if not args.no_compile_time:
        times_ = compile_times()
        print(f"compile (empty cache, fresh process): {times_['compile_cpu_s']} CPU-s, "
              f"{times_['compile_wall_s']} s wall; from the cache: {times_['cached_cpu_s']} "
              f"CPU-s, {times_['cached_wall_s']} s wall (whole processes, imports included)")
        figures.update(times_)
    if args.memory_durations:
        points = memory_points(args.memory_durations.split(","))
        for p in points:
            print(f"memory: {p['duration']}: {p['rows']:,} attempt rows, peak "
                  f"{p['peak_mib']} MiB")
        figures["memory"] = points
        figures["memory_ratio"] = round(points[-1]["peak_mib"] / points[0]["peak_mib"], 3)
    write(args.json, "compiled", figures, load_before=round(load_before[0], 2))


if __name__ == "__main__":
    main()
