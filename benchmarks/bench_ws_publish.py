"""What the websocket side costs the engine: SimPy events and CPU, streams on vs off.

    python3 benchmarks/bench_ws_publish.py [--scenario FILE] [--duration S] [--repeat N]

Runs every tier of the scenario (default: the built-in one) twice in this process: as
written, and with its ``[[streams]]`` removed (``streams=[]``). Prints the SimPy events
scheduled (deterministic: the same on any machine) and the model's CPU seconds (median
of --repeat), and the differences: the websocket side's events and CPU. The event count
is what publishing per event rather than per process changes; the CPU figure is noisy on
a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from results import add_json_option, write

from sim.config.resolved import load
from sim.model import engine
from sim.workload.demand import build_plan


def measure(scenario: str | None, overrides: list[str], repeat: int) -> tuple[int, int, float]:
    """(events scheduled, attempts, median CPU seconds) over every tier of the scenario."""
    loaded = load(scenario, overrides)
    plan = build_plan(loaded)
    cpus, events, attempts = [], 0, 0
    for _ in range(repeat):
        cpu, events, attempts = 0.0, 0, 0
        for tier in loaded.tiers:
            run = engine.TierRun(plan, tier)
            start = time.process_time()
            result = run.run()
            cpu += time.process_time() - start
            events += next(run.env._eid)  # ids drawn = events scheduled (pushes included)
            attempts += len(result.attempt_sink.read(["outcome"])["outcome"])
        cpus.append(cpu)
    return events, attempts, statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=None)
    parser.add_argument("--duration", type=float, default=3600.0)
    parser.add_argument("--repeat", type=int, default=3)
    add_json_option(parser, "ws_publish")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    base = [f"duration={args.duration}"]
    on = measure(args.scenario, base, args.repeat)
    off = measure(args.scenario, [*base, "streams=[]"], args.repeat)
    print(f"scenario: {args.scenario or 'default'}, {args.duration:.0f} s simulated, "
          f"median of {args.repeat}")
    print(f"{'':14}{'SimPy events':>14}{'attempts':>12}{'CPU s':>9}")
    print(f"{'streams on':14}{on[0]:14,}{on[1]:12,}{on[2]:9.2f}")
    print(f"{'streams off':14}{off[0]:14,}{off[1]:12,}{off[2]:9.2f}")
    print(f"{'websockets':14}{on[0] - off[0]:14,}{on[1] - off[1]:12,}{on[2] - off[2]:9.2f}"
          f"  ({(on[2] - off[2]) / on[2]:.1%} of the CPU)")
    write(args.json, "ws_publish", {
        "scenario": args.scenario or "default", "duration_s": args.duration,
        "repeat": args.repeat,
        "events_streams_on": on[0], "attempts_streams_on": on[1],
        "cpu_s_streams_on": round(on[2], 3),
        "events_streams_off": off[0], "attempts_streams_off": off[1],
        "cpu_s_streams_off": round(off[2], 3),
        "events_websockets": on[0] - off[0],
        "cpu_share_websockets": round((on[2] - off[2]) / on[2], 4),
    }, load_before=load_before)


if __name__ == "__main__":
    main()
