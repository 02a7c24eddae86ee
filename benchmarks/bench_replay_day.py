"""Wall time of replaying a day of a 400 requests/s account against the nine tiers.

    python3 benchmarks/bench_replay_day.py [--hours 24] [--jobs 2] [--no-floor]
        [--json PATH]

Writes a canonical trace of ``--hours`` hours at 400 requests/s (34.6 million rows for a
day; ``bench_replay_memory.write_trace``: RPC calls and sizing requests, 1 % throttled,
row groups of 500,000 rows), then times ``capsim run --jobs N --records windows`` of a
scenario replaying it against every tier, in a fresh process, with its peak RSS and its
largest worker's. The floor, measured in the same run unless ``--no-floor``: the same
scenario with a synthetic Poisson source of the same rate instead of the trace (the
simulation's own cost; the trace adds reading and scanning the file). A day takes long
on two cores: ``--hours 1`` gives the same figures per hour.
"""

from __future__ import annotations

import argparse
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

SCENARIO = """name = "replay-day"
duration = {duration}
[account]
keys = ["k1"]
[[sources]]
name = "rec"
key = "k1"
{source}
"""


def run(scenario: Path, out: Path, jobs: int) -> dict:
    args = ["run", str(scenario), "--out", str(out), "-q", "--records", "windows",
            "--jobs", str(jobs), "--max-requests", "10000000000"]
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
    return {"seconds": time.perf_counter() - start, "cpu_seconds": cpu,
            "peak_rss_bytes": me, "worker_peak_rss_bytes": kids}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-floor", action="store_true")
    add_json_option(ap, "replay_day")
    a = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    duration = a.hours * 3600.0
    rows = int(RATE * duration)
    gib = 2**30
    result: dict = {"hours": a.hours, "rate_per_s": RATE, "rows": rows, "jobs": a.jobs}
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
        got = run(scn, tmp / "out", a.jobs)
        result["replay"] = got
        print(f"replay, 9 tiers, --jobs {a.jobs} --records windows: {got['seconds'] / 60:.1f} min "
              f"({got['cpu_seconds'] / 60:.1f} CPU-min), "
              f"peak RSS {got['peak_rss_bytes'] / gib:.2f} GiB (largest worker "
              f"{got['worker_peak_rss_bytes'] / gib:.2f} GiB)")
        if not a.no_floor:
            floor_scn = tmp / "floor.toml"
            floor_scn.write_text(SCENARIO.format(
                duration=duration,
                source=f'arrival = {{ process = "poisson", rate = {RATE} }}'))
            floor = run(floor_scn, tmp / "out-floor", a.jobs)
            result["floor"] = floor
            result["ratio_to_floor"] = got["seconds"] / floor["seconds"]
            print(f"floor (synthetic Poisson {RATE:g}/s): {floor['seconds'] / 60:.1f} min "
                  f"({floor['cpu_seconds'] / 60:.1f} CPU-min), "
                  f"peak RSS {floor['peak_rss_bytes'] / gib:.2f} GiB; replay / floor = "
                  f"{result['ratio_to_floor']:.2f}")
    write(a.json, "replay_day", result, load_before=load_before)


if __name__ == "__main__":
    main()
