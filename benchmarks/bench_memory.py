"""Peak memory per simulated request: the figures behind the run-size guard.

    python3 benchmarks/bench_memory.py [--rates 200,800] [--duration 1000]

Runs ``capsim run`` (the whole job: demand, every tier, frames, report) in a fresh
process per point on a one-source Poisson scenario without retries, so attempts equal
requests, and reads the process's peak RSS. Two request counts on 1 tier and on 3 tiers
give, by least squares on ``rss = base + N * (per_request + per_attempt * tiers)``, the
bytes one request costs once (the demand) and the bytes one attempt costs per tier.
Compare them with ``sim.workload.size_estimate.BYTES_PER_ATTEMPT`` (one tier at a time)
and ``BASE_BYTES``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from results import add_json_option, write

SCENARIO = """name = "memory"
duration = {duration}
[account]
keys = ["k1"]
[clients.default]
retry = {{ policy = "none" }}
[[sources]]
name = "s"
key = "k1"
arrival = {{ process = "poisson", rate = {rate} }}
"""
CHILD = """
import resource, sys
from sim.cli.main import main
main(sys.argv[1:], standalone_mode=False)
print("PEAK", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""
TIER_SETS = (("RPC",), ("RPC", "Search", "Advanced bundle"))


def peak(rate: float, duration: float, tiers: tuple[str, ...], tmp: Path) -> tuple[int, int]:
    """(peak RSS bytes, attempts per tier) of one ``capsim run`` in a fresh process."""
    path = tmp / f"s-{rate}.toml"
    path.write_text(SCENARIO.format(rate=rate, duration=duration))
    out = tmp / "out"
    args = ["run", str(path), "--out", str(out), "-q", "--max-requests", "1000000000"]
    for t in tiers:
        args += ["--tier", t]
    done = subprocess.run([sys.executable, "-c", CHILD, *args], check=True,
                          capture_output=True, text=True)
    rss = int(done.stdout.split("PEAK")[-1])
    summary = json.loads((out / "summary.json").read_text())
    return rss, summary["tiers"][0]["attempts"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="200,800")
    parser.add_argument("--duration", type=float, default=1000.0)
    add_json_option(parser, "memory")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    rows, rss, points = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for tiers in TIER_SETS:
            for rate in rates:
                bytes_, n = peak(rate, args.duration, tiers, Path(tmp))
                print(f"tiers={len(tiers)} requests={n:>9,} peak RSS={bytes_ / 2**20:8.1f} MiB")
                rows.append((1.0, n, n * len(tiers)))
                points.append({"tiers": len(tiers), "requests": n,
                               "peak_rss_mib": round(bytes_ / 2**20, 1)})
                rss.append(bytes_)
    (base, per_request, per_attempt), *_ = np.linalg.lstsq(np.array(rows), np.array(rss),
                                                           rcond=None)
    print(f"base {base / 2**20:.0f} MiB, {per_request:.0f} bytes per request (once), "
          f"{per_attempt:.0f} bytes per attempt per tier")
    write(args.json, "memory", {"duration_s": args.duration, "points": points,
                                "base_mib": round(base / 2**20, 1),
                                "bytes_per_request": round(per_request),
                                "bytes_per_attempt_per_tier": round(per_attempt)})


if __name__ == "__main__":
    main()
