"""Machine instructions the engine executes: a figure that does not depend on the load.

    python3 benchmarks/bench_instructions.py [--tiers 3] [--duration 300] [--streams on|off]

Runs the model (``TierRun`` on the default scenario, the first ``--tiers`` tiers) under
``valgrind --tool=callgrind`` twice -- once building the plans and runs only, once also
running them -- and prints the difference: the instructions of the runs alone. Valgrind
makes Python about 50 times slower, so keep the run small (the default takes a few
minutes). The child runs in the current folder, so the ``sim`` measured is the one
there: compare two trees by running this from each. Needs ``valgrind`` on the PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from results import add_json_option, write

CHILD = r'''
import sys
from sim.model.engine import TierRun
from sim.config.resolved import load
from sim.workload.demand import build_plan
tiers, duration = int(sys.argv[1]), sys.argv[2]
streams, run = sys.argv[3] == "on", sys.argv[4] == "run"
loaded = load(None, [f"duration={duration}"] + ([] if streams else ["streams=[]"]))
plan = build_plan(loaded)
runs = [TierRun(plan, t) for t in list(loaded.tiers)[:tiers]]
if run:
    for r in runs:
        r.run()
'''


def instructions(args: list[str]) -> int:
    """Instructions callgrind collected for the child program with ``args``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=True)
    match = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    if match is None:
        raise SystemExit("callgrind printed no instruction count:\n" + proc.stderr[-2000:])
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", type=int, default=3)
    parser.add_argument("--duration", default="300")
    parser.add_argument("--streams", choices=("on", "off"), default="off")
    add_json_option(parser, "instructions")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    common = [str(args.tiers), args.duration, args.streams]
    total = instructions(common + ["run"])
    setup = instructions(common + ["setup"])
    print(f"default scenario, {args.tiers} tier(s) x {args.duration} s, streams "
          f"{args.streams}: {(total - setup) / 1e6:,.0f} M instructions in the runs "
          f"({total / 1e6:,.0f} M in all, {setup / 1e6:,.0f} M building them)")
    write(args.json, "instructions", {"tiers": args.tiers, "duration_s": float(args.duration),
                                      "streams": args.streams,
                                      "instructions_runs": total - setup,
                                      "instructions_setup": setup})


if __name__ == "__main__":
    main()
