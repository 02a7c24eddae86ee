"""A day of traffic on every tier: wall time and peak memory in all (issue 11's target:
24 h x 9 tiers of the default scenario in at most 5 minutes with ``--jobs 2``, under
2 GiB peak RSS in all).

    python3 benchmarks/bench_day.py [--duration 24h] [--jobs 2] [--records attempts]

Runs ``capsim run -q --jobs N --set duration=D`` on the default scenario (every tier) in
a child process and samples, every 0.2 s, the resident memory of that process and of all
its descendants (the worker processes) from ``/proc``: the peak of the sum is the figure
"in all". Also prints each process's own peak (``ru_maxrss`` of the parent, and of the
largest worker), the attempts simulated, the CPU seconds of the run in all (user +
system of the child and its workers: steadier than the wall time on a shared machine),
and the load average before and after (the machine may be shared: compare figures
measured under similar load).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time

from peak_child import CHILD, parse_peak
from results import add_json_option, write


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants."""
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss(pid)
        todo.extend(tree.get(pid, []))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="24h")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--records", default="attempts")
    add_json_option(parser, "day")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/out"
        cmd = [sys.executable, "-c", CHILD, "run", "-q", "--out", out, "--set",
               f"duration={args.duration}", "--jobs", str(args.jobs), "--records",
               args.records, "--max-requests", "1000000000"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        peak, stop = [0], threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], tree_rss(proc.pid))
                stop.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        stdout, _ = proc.communicate()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        stop.set()
        sampler.join()
        if proc.returncode != 0:
            raise SystemExit(f"capsim run failed with exit code {proc.returncode}")
        me, kids = parse_peak(stdout)
        with open(f"{out}/summary.json") as f:
            summary = json.load(f)
        attempts = sum(t["attempts"] for t in summary["tiers"])
        parquet = os.path.getsize(f"{out}/requests.parquet") if args.records == "attempts" else 0
    print(f"capsim run -q --jobs {args.jobs} --set duration={args.duration} "
          f"--records {args.records} (default scenario, {len(summary['tiers'])} tiers)")
    print(f"load average before {load_before[0]:.1f} / {load_before[1]:.1f}, after "
          f"{os.getloadavg()[0]:.1f} / {os.getloadavg()[1]:.1f} (1 / 5 min) on "
          f"{os.cpu_count()} CPUs")
    print(f"wall {wall:8.1f} s ({wall / 60:.1f} min)   attempts {attempts:,}   "
          f"{attempts / wall:,.0f} attempts/s wall")
    print(f"CPU in all (run + workers) {cpu:8.1f} s ({cpu / wall:.2f} CPUs busy on average)")
    print(f"peak RSS in all (parent + workers, sampled) {peak[0] / 2**30:6.2f} GiB")
    print(f"peak RSS parent {me / 2**20:7.1f} MiB, largest worker {kids / 2**20:7.1f} MiB")
    if parquet:
        print(f"requests.parquet {parquet / 2**20:,.1f} MiB, {parquet / attempts:.1f} B/attempt")
    write(args.json, "day", {
        "duration": args.duration, "jobs": args.jobs, "records": args.records,
        "tiers": len(summary["tiers"]), "attempts": attempts, "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1), "peak_rss_all_gib": round(peak[0] / 2**30, 3),
        "peak_rss_parent_mib": round(me / 2**20, 1),
        "peak_rss_largest_worker_mib": round(kids / 2**20, 1),
        "requests_parquet_bytes_per_attempt": round(parquet / attempts, 2) if parquet else None,
    }, load_before=round(load_before[0], 2))


if __name__ == "__main__":
    main()
