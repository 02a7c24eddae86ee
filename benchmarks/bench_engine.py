"""Simulated attempts per CPU-second: the full model vs a bare SimPy loop, same run.

    python3 benchmarks/bench_engine.py [--duration S] [--tier NAME]... [--repeat N]

The bare loop is the cheapest SimPy program with the same shape as the workload: one
generator feeding N requests at the default scenario's open-loop times, one process per
request, one timeout per process. The model is `capsim`'s TierRun on the default
scenario (every tier unless --tier), attempts (HTTP requests and websocket handshakes)
counted from its records; websocket publishing is work the model does that the count
leaves out, so --no-streams gives the HTTP-only figure. The figure to
watch is the ratio model/bare; both are measured in this process, best of --repeat.
"""

from __future__ import annotations

import argparse
import time

import simpy

from sim.model.engine import TierRun
from sim.policy.resolved import load
from sim.policy.tiers import find_tier
from sim.workload.demand import build_plan


def bare_loop(times: list[float]) -> float:
    """Requests per CPU-second of a minimal SimPy loop over the same arrival times."""
    def request(env):
        yield env.timeout(0.05)

    def feeder(env):
        for t in times:
            if t > env.now:
                yield env.timeout(t - env.now)
            env.process(request(env))

    env = simpy.Environment()
    env.process(feeder(env))
    start = time.process_time()
    env.run()
    return len(times) / (time.process_time() - start)


def model(plan, tiers) -> tuple[float, int]:
    """Attempts per CPU-second of the full model over ``tiers``, and the attempt count."""
    attempts, cpu = 0, 0.0
    for tier in tiers:
        run = TierRun(plan, tier)
        start = time.process_time()
        result = run.run()
        cpu += time.process_time() - start
        attempts += len(result.attempts["outcome"])
    return attempts / cpu, attempts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3600.0)
    parser.add_argument("--tier", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenario", default=None, help="scenario file (default: built-in)")
    parser.add_argument("--no-streams", action="store_true",
                        help="drop the scenario's websocket clients (HTTP traffic only)")
    args = parser.parse_args()
    overrides = [f"duration={args.duration}"] + (["streams=[]"] if args.no_streams else [])
    loaded = load(args.scenario, overrides)
    tiers = [find_tier(t, loaded.tiers) for t in args.tier] or list(loaded.tiers)
    plan = build_plan(loaded)
    times = plan.demand.t.tolist()
    best_bare = max(bare_loop(times) for _ in range(args.repeat))
    runs = [model(plan, tiers) for _ in range(args.repeat)]
    best_model, attempts = max(runs)
    print(f"scenario: {loaded.scenario.name}{' (no streams)' if args.no_streams else ''}, "
          f"{args.duration:.0f} s simulated, "
          f"{len(tiers)} tier(s), {attempts:,} attempts per repeat")
    print(f"bare SimPy loop : {best_bare:12,.0f} requests / CPU-s")
    print(f"capsim model    : {best_model:12,.0f} attempts / CPU-s")
    print(f"ratio           : {best_model / best_bare:12.2f}")


if __name__ == "__main__":
    main()
