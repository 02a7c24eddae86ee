"""Peak RSS against run length: is memory flat in the simulated duration?

    python3 benchmarks/bench_memory_runlength.py [--durations 1h,6h,24h]
        [--tier "All 3 APIs"] [--records attempts] [--jobs 1] [--all-tiers]

Runs ``capsim run`` on the default scenario in a fresh child process per duration
(the whole job: demand, the tier(s), summary, report) and prints each child's peak RSS
(``ru_maxrss`` of the child and of its worker processes), its wall time, and the ratio
of each peak to the first duration's. With ``--all-tiers --jobs 2 --durations 24h`` it
measures the day-on-every-tier figure: wall time and the peak of the parent and of the
largest worker.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from peak_child import CHILD, parse_peak
from results import add_json_option, write


def measure(duration: str, tiers: list[str], records: str, jobs: int, out: str):
    args = ["run", "-q", "--out", out, "--set", f"duration={duration}", "--records", records,
            "--jobs", str(jobs), "--max-requests", "1000000000"]
    for t in tiers:
        args += ["--tier", t]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *args], check=True,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    me, kids = parse_peak(done.stdout)
    return wall, me, kids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durations", default="1h,6h,24h")
    parser.add_argument("--tier", action="append", default=None)
    parser.add_argument("--all-tiers", action="store_true")
    parser.add_argument("--records", default="attempts")
    parser.add_argument("--jobs", type=int, default=1)
    add_json_option(parser, "memory_runlength")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    points = []
    tiers = [] if args.all_tiers else (args.tier or ["All 3 APIs"])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; tiers: "
          f"{', '.join(tiers) or 'all'}; --records {args.records} --jobs {args.jobs}")
    first, base = None, args.durations.split(",")[0]
    with tempfile.TemporaryDirectory() as tmp:
        for d in args.durations.split(","):
            wall, me, kids = measure(d, tiers, args.records, args.jobs, f"{tmp}/out")
            peak = max(me, kids)
            first = first or peak
            print(f"{d:>5}: wall {wall:7.1f} s  peak RSS parent {me / 2**20:7.1f} MiB, "
                  f"largest worker {kids / 2**20:7.1f} MiB  ratio to {base} {peak / first:5.2f}")
            points.append({"duration": d, "wall_s": round(wall, 1),
                           "peak_rss_parent_mib": round(me / 2**20, 1),
                           "peak_rss_largest_worker_mib": round(kids / 2**20, 1),
                           "ratio_to_first": round(peak / first, 3)})
    write(args.json, "memory_runlength", {"tiers": tiers or "all", "records": args.records,
                                          "jobs": args.jobs, "points": points},
          load_before=load_before)


if __name__ == "__main__":
    main()
