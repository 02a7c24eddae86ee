"""Wall time of replaying a day of a 400 requests/s account against the nine tiers.

    python3 benchmarks/bench_replay_day.py [--hours 24] [--jobs 2] [--no-floor]
        [--engine auto|simpy|compiled] [--simpy-hours H] [--json PATH]

Writes a canonical trace of ``--hours`` hours at 400 requests/s (34.6 million rows for a
day; ``bench_replay_memory.write_trace``: RPC calls and sizing requests, 1 % throttled,
row groups of 500,000 rows), then times ``capsim run --jobs N --records windows`` of a
scenario replaying it against every tier, in a fresh process, with its peak RSS and its
largest worker's. The floor, measured in the same run unless ``--no-floor``: the same
scenario with a synthetic Poisson source of the same rate instead of the trace (the
simulation's own cost; the trace adds reading and scanning the file). A day takes long
on two cores: ``--hours 1`` gives the same figures per hour.

``--engine`` is passed to ``capsim run`` (default ``auto``); the engine that ran is read
from the run's ``summary.json`` and written with the figures. ``--simpy-hours H`` (default
1; 0: none) also replays the first H hours of the same rate on the SimPy model
(``--engine simpy``) in the same run: the per-hour ratio of the two engines' CPU measured
today, beside the ratio to the issue's measured 87.6 CPU-minutes for a day of today's
SimPy model.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replay_memory import RATE, write_trace  # noqa: E402
from peak_child import CHILD, parse_peak  # noqa: E402
from results import add_json_option, write  # noqa: E402

#: Issue 31's measured CPU of a day replayed on the SimPy model (nine tiers, --jobs 2).
ISSUE_SIMPY_DAY_CPU_MIN = 87.6

SCENARIO = """name = "replay-day"
duration = {duration}
[account]
keys = ["k1"]
[[sources]]
name = "rec"
key = "k1"
{source}
"""


def run(scenario: Path, out: Path, jobs: int, engine: str = "auto") -> dict:
    args = ["run", str(scenario), "--out", str(out), "-q", "--records", "windows",
            "--jobs", str(jobs), "--max-requests", "10000000000", "--engine", engine]
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                          text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.stderr.write(proc.stderr[-3000:])
        raise SystemExit("capsim run failed")
    me, kids = parse_peak(proc.stdout)
    # CPU of the run and its workers (they are waited for, so their usage rolls up): a
    # figure the machine's load moves much less than the wall time.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ran = json.loads((out / "summary.json").read_text()).get("engine") or "simpy"
    return {"seconds": time.perf_counter() - start, "cpu_seconds": cpu,
            "peak_rss_bytes": me, "worker_peak_rss_bytes": kids, "engine": ran}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-floor", action="store_true")
    ap.add_argument("--engine", default="auto", choices=("auto", "simpy", "compiled"))
    ap.add_argument("--simpy-hours", type=float, default=1.0,
                    help="hours replayed on the SimPy model in the same run (0: none)")
    add_json_option(ap, "replay_day")
    a = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    duration = a.hours * 3600.0
    rows = int(RATE * duration)
    gib = 2**30
    result: dict = {"hours": a.hours, "rate_per_s": RATE, "rows": rows, "jobs": a.jobs,
                    "engine_requested": a.engine}
    with tempfile.TemporaryDirectory(prefix="capsim-day-") as tmp:
        tmp = Path(tmp)
        trace = tmp / "day.parquet"
        t0 = time.perf_counter()
        write_trace(trace, rows)
        print(f"trace: {rows:,} rows ({a.hours:g} h at {RATE:g}/s), "
              f"{trace.stat().st_size / 2**20:,.0f} MiB, "
              f"written in {time.perf_counter() - t0:.0f} s")
        scn = tmp / "replay.toml"
        scn.write_text(SCENARIO.format(duration=duration, source=f'trace = "{trace}"'))
        got = run(scn, tmp / "out", a.jobs, a.engine)
        result["replay"] = got
        print(f"replay, 9 tiers, --jobs {a.jobs} --records windows, engine {got['engine']}: "
              f"{got['seconds'] / 60:.1f} min ({got['cpu_seconds'] / 60:.1f} CPU-min), "
              f"peak RSS {got['peak_rss_bytes'] / gib:.2f} GiB (largest worker "
              f"{got['worker_peak_rss_bytes'] / gib:.2f} GiB)")
        issue_cpu_s = ISSUE_SIMPY_DAY_CPU_MIN * 60 * a.hours / 24
        result["issue_simpy_cpu_min_per_day"] = ISSUE_SIMPY_DAY_CPU_MIN
        result["ratio_to_issue_simpy_cpu"] = issue_cpu_s / got["cpu_seconds"]
        print(f"the issue's SimPy figure ({ISSUE_SIMPY_DAY_CPU_MIN} CPU-min a day, "
              f"{issue_cpu_s / 60:.1f} for {a.hours:g} h) / this run's CPU = "
              f"{result['ratio_to_issue_simpy_cpu']:.1f}x")
        if a.simpy_hours > 0:
            prefix = tmp / "prefix.parquet"
            write_trace(prefix, int(RATE * a.simpy_hours * 3600.0))
            model_scn = tmp / "simpy.toml"
            model_scn.write_text(SCENARIO.format(duration=a.simpy_hours * 3600.0,
                                                 source=f'trace = "{prefix}"'))
            model = run(model_scn, tmp / "out-simpy", a.jobs, "simpy")
            result["simpy"] = {**model, "hours": a.simpy_hours}
            per_hour = (model["cpu_seconds"] / a.simpy_hours) / (got["cpu_seconds"] / a.hours)
            result["ratio_simpy_cpu_per_hour"] = per_hour
            print(f"SimPy model, {a.simpy_hours:g} h of the same rate, same run: "
                  f"{model['seconds'] / 60:.1f} min ({model['cpu_seconds'] / 60:.1f} CPU-min);"
                  f" its CPU per simulated hour / this run's = {per_hour:.1f}x")
        if not a.no_floor:
            floor_scn = tmp / "floor.toml"
            floor_scn.write_text(SCENARIO.format(
                duration=duration,
                source=f'arrival = {{ process = "poisson", rate = {RATE} }}'))
            floor = run(floor_scn, tmp / "out-floor", a.jobs, a.engine)
            result["floor"] = floor
            result["ratio_to_floor"] = got["seconds"] / floor["seconds"]
            print(f"floor (synthetic Poisson {RATE:g}/s): {floor['seconds'] / 60:.1f} min "
                  f"({floor['cpu_seconds'] / 60:.1f} CPU-min), "
                  f"peak RSS {floor['peak_rss_bytes'] / gib:.2f} GiB; replay / floor = "
                  f"{result['ratio_to_floor']:.2f}")
    write(a.json, "replay_day", result, load_before=load_before)


if __name__ == "__main__":
    main()
