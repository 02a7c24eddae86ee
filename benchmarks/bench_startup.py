"""Start-up wall time of the light commands, against bare Python and the heavy imports.

    python3 benchmarks/bench_startup.py [--repeat 3]

Each command runs in a fresh process; the figure is the median of --repeat runs. The
baselines are measured in the same run: ``python -c pass`` (the floor) and importing
pandas, pyarrow and matplotlib (what a report needs, and what the light commands must
not pay). On a shared machine compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import pandas, pyarrow, matplotlib": [
        sys.executable, "-c", "import pandas, pyarrow, matplotlib.pyplot"],
    "capsim tiers": [sys.executable, "-m", "sim.cli", "tiers"],
    "capsim validate searcher.toml": [
        sys.executable, "-m", "sim.cli", "validate", str(ROOT / "workloads" / "searcher.toml")],
}


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"median of {args.repeat}")
    floor = None
    for name, cmd in CASES.items():
        t = statistics.median(wall(cmd) for _ in range(args.repeat))
        floor = floor or t
        print(f"{name:<36} {t:6.2f} s  ({t / floor:5.1f}x python -c pass)")


if __name__ == "__main__":
    main()
