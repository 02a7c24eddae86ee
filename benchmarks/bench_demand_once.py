"""Issue 31 step 5, the next bottlenecks: demand drawn once per run, cheaper per-tier
aggregates, headroom rounds -- each before and after, against a bare SimPy loop.

    python3 benchmarks/bench_demand_once.py [--minutes 10] [--tiers 9] [--repeat 3]
        [--json PATH]

Writes a canonical trace of ``--minutes`` minutes at 400 requests/s
(``bench_replay_memory.write_trace``: RPC calls and sizing requests) and measures, in
this process, in CPU seconds (medians of ``--repeat``):

* the bare SimPy loop over the trace's send times (``bench_engine.bare_loop``: one
  process and one timeout per request), the yardstick every other figure is divided by;
* the demand of one tier **before**: a pass of ``Plan.demand_blocks`` (reading the trace
  and drawing what it leaves out), plus, in a worker of ``--jobs N``, the plan's scan of
  the trace (every worker built its own plan);
* the demand of one tier **after** (``sim.workload.demand_spool``): reading the spooled
  blocks back, plus the one draw-and-write shared by the ``--tiers`` tiers;
* one tier's aggregates (``sim.runner.run.tier_parts`` of the ``RPC + Search`` tier's run
  of the same demand) with ``ExactSum`` as it was (``math.fsum`` of every value) and as
  it is (zeros dropped first), and that tier's SimPy run for scale;
* ``capsim headroom``'s rounds (batches) and model runs on a closed-form scenario
  (constant ``svc_call`` calls against a custom tier; the sequential search takes 9
  loads) with 1, 2, 3 and 7 workers: counts, the same on any machine.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import bare_loop  # noqa: E402
from bench_replay_memory import RATE, write_trace  # noqa: E402
from results import add_json_option, write  # noqa: E402

from sim.config.selection import load_scenario  # noqa: E402
from sim.jobs.executors import SequentialExecutor  # noqa: E402
from sim.jobs.headroom import find_headroom  # noqa: E402
from sim.metrics import stream_stats  # noqa: E402
from sim.model.engine import TierRun  # noqa: E402
from sim.runner.run import tier_parts  # noqa: E402
from sim.workload.demand import build_plan  # noqa: E402
from sim.workload.demand_spool import spool_demand  # noqa: E402

SCENARIO = """name = "demand-once"
duration = {duration}
[account]
keys = ["k1"]
[[sources]]
name = "rec"
key = "k1"
trace = "{trace}"
"""

HEADROOM = """name = "headroom"
duration = 120
tiers = ["Mine"]
[[custom_tiers]]
name = "Mine"
cu_per_window = 1010
daily_allowance_cu = 1e12
[[regions]]
name = "here"
rtt_ms = 0
[clients.default]
retry = { policy = "none" }
[methods.svc_call]
api = "rpc"
service_time = { dist = "constant", value = 0.0 }
[slo]
max_throttle_rate = 0.0
max_failure_rate = 1.0
p99_latency_ms = 1e9
[account]
keys = ["k"]
[[sources]]
name = "calls"
key = "k"
arrival = { process = "constant", rate = 2.5 }
"""


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def drain(plan) -> int:
    return sum(len(b) for b in plan.demand_blocks())


def fsum_every_value(self, values) -> None:
    """``ExactSum.add`` before: ``math.fsum`` of every value, zeros included."""
    if len(values) == 0:
        return
    chunk = np.asarray(values, dtype=float).tolist()
    terms: list[float] = []
    while True:
        s = math.fsum(chunk + [-t for t in terms])
        if s == 0.0 or not math.isfinite(s):
            if s != 0.0 or not terms:
                terms.append(s)
            break
        terms.append(s)
    self._terms.extend(terms)


class Counting(SequentialExecutor):
    """Runs in this process; claims ``workers`` workers; counts batches and runs."""

    def __init__(self, workers: int) -> None:
        self.workers, self.rounds, self.runs = workers, 0, 0

    def as_completed(self, fn, items):
        items = list(items)
        self.rounds += 1
        self.runs += len(items)
        yield from super().as_completed(fn, items)


def headroom_counts(tmp: Path) -> list[dict]:
    path = tmp / "headroom.toml"
    path.write_text(HEADROOM, encoding="utf-8")
    out = []
    for workers in (1, 2, 3, 7):
        ex = Counting(workers)
        (entry,) = find_headroom(str(path), tolerance=0.01, executor=ex).tiers
        out.append({"workers": workers, "path_loads": entry.evaluations,
                    "rounds": ex.rounds, "model_runs": ex.runs,
                    "headroom": entry.headroom, "next_load": entry.next_load})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--tiers", type=int, default=9)
    ap.add_argument("--repeat", type=int, default=3)
    add_json_option(ap, "demand_once")
    a = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    duration = a.minutes * 60.0
    rows = int(RATE * duration)
    with tempfile.TemporaryDirectory(prefix="capsim-demand-") as tmp:
        tmp = Path(tmp)
        trace = tmp / "trace.parquet"
        write_trace(trace, rows)
        scn = tmp / "replay.toml"
        scn.write_text(SCENARIO.format(duration=duration, trace=trace), encoding="utf-8")
        loaded = load_scenario(str(scn), tiers=["RPC + Search"])
        plan = build_plan(loaded)
        times = np.concatenate([b.t for b in plan.demand_blocks()]).tolist()
        n = len(times)
        bare, scan, draw, spool, read = [], [], [], [], []
        for k in range(a.repeat):
            bare.append(bare_loop(times))
            scan.append(cpu(lambda: build_plan(loaded)))
            draw.append(cpu(lambda: drain(plan)))
            folder = tmp / f"spool{k}"
            folder.mkdir()
            start = time.process_time()
            spooled = spool_demand(plan, folder)
            spool.append(time.process_time() - start)
            read.append(cpu(lambda spooled=spooled: drain(spooled)))
        bare_s, scan_s, draw_s, spool_s, read_s = (statistics.median(x) for x in
                                                   (bare, scan, draw, spool, read))
        result = TierRun(plan, loaded.tiers[0], spool=str(tmp / "tier")).run()
        tier_run_s = cpu(lambda: TierRun(plan, loaded.tiers[0],
                                         spool=str(tmp / "tier2")).run())
        new_add = stream_stats.ExactSum.add
        parts_after, parts_before = [], []
        for _ in range(a.repeat):
            parts_after.append(cpu(lambda: tier_parts(result, plan)))
            stream_stats.ExactSum.add = fsum_every_value
            try:
                parts_before.append(cpu(lambda: tier_parts(result, plan)))
            finally:
                stream_stats.ExactSum.add = new_add
        attempts = len(result.attempt_sink.read(["t_send"])["t_send"])
        headroom = headroom_counts(tmp)
    t = a.tiers
    before_1 = draw_s
    before_n = scan_s + draw_s
    after = read_s + spool_s / t
    figures = {
        "minutes": a.minutes, "rate_per_s": RATE, "requests": n, "tiers": t,
        "repeat": a.repeat, "attempts_one_tier": attempts,
        "bare_loop_cpu_s": round(bare_s, 3),
        "scan_cpu_s": round(scan_s, 3), "draw_cpu_s": round(draw_s, 3),
        "spool_cpu_s": round(spool_s, 3), "read_cpu_s": round(read_s, 3),
        "per_tier_before_jobs_1_cpu_s": round(before_1, 3),
        "per_tier_before_jobs_n_cpu_s": round(before_n, 3),
        "per_tier_after_cpu_s": round(after, 3),
        "ratio_before_jobs_1": round(before_1 / bare_s, 3),
        "ratio_before_jobs_n": round(before_n / bare_s, 3),
        "ratio_after": round(after / bare_s, 3),
        "per_tier_hour_before_jobs_n_cpu_s": round(before_n * 60 / a.minutes, 2),
        "per_tier_hour_after_cpu_s": round(after * 60 / a.minutes, 2),
        "tier_run_cpu_s": round(tier_run_s, 3),
        "ratio_tier_run": round(tier_run_s / bare_s, 3),
        "tier_parts_before_cpu_s": round(statistics.median(parts_before), 3),
        "tier_parts_after_cpu_s": round(statistics.median(parts_after), 3),
        "ratio_tier_parts_before": round(statistics.median(parts_before) / bare_s, 3),
        "ratio_tier_parts_after": round(statistics.median(parts_after) / bare_s, 3),
        "headroom": headroom,
    }
    print(f"{n:,} requests ({a.minutes:g} min at {RATE:g}/s); CPU s, medians of {a.repeat}; "
          f"÷ bare SimPy loop over the same requests ({bare_s:.3f} s)")
    print(f"  demand per tier, before, --jobs 1 (a draw):        {before_1:7.3f}  "
          f"{before_1 / bare_s:6.3f}")
    print(f"  demand per tier, before, --jobs N (scan + draw):   {before_n:7.3f}  "
          f"{before_n / bare_s:6.3f}")
    print(f"  demand per tier, after (read + spool / {t}):        {after:7.3f}  "
          f"{after / bare_s:6.3f}")
    print(f"  one tier's SimPy run ({attempts:,} attempts):       {tier_run_s:7.3f}  "
          f"{tier_run_s / bare_s:6.3f}")
    print(f"  its aggregates, before / after:                  "
          f"{figures['tier_parts_before_cpu_s']:7.3f} / {figures['tier_parts_after_cpu_s']:.3f}")
    for h in headroom:
        print(f"  headroom, {h['workers']} worker(s): {h['path_loads']} loads on the path, "
              f"{h['rounds']} rounds, {h['model_runs']} model runs, "
              f"[{h['headroom']:.6g}, {h['next_load']:.6g}]")
    write(a.json, "demand_once", figures, load_before=load_before)


if __name__ == "__main__":
    main()
