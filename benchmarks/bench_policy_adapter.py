"""What a policy costs called from Python: the limiter's Python class against the
compiled limiter function behind a thin adapter, per call, same run.

    python3 benchmarks/bench_policy_adapter.py [--calls N] [--repeat R]

Issue 31 proposed writing each policy once, as compiled functions over arrays, with the
Python classes (``CULimiter`` and the connection classes) as thin adapters over them.
The SimPy model, the emulator and calibration call a policy once per decision from
Python, so the adapter's cost is what they would pay: each call converts the state
arrays for numba. Measured here on ``spend`` (reserve and settle at once, the websocket
side's verb) with :class:`sim.compiled.websockets.ArrayLimiter`, the adapter the
compiled engine's websocket side does use, against ``CULimiter.spend``; both are
scaled by a bare SimPy loop's CPU per request measured in the same repeat
(``bench_engine.bare_loop``). Medians of ``--repeat``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from bench_engine import bare_loop
from results import add_json_option, write

from sim.compiled import loop as lp
from sim.compiled import policies as po
from sim.compiled.websockets import ArrayLimiter
from sim.policy.limiter import CULimiter


def _adapter(budget: float, windows: int) -> ArrayLimiter:
    LF, LI, WF, WI, DF, DI = po.limiter_state_of(CULimiter(budget), n_windows=windows,
                                                 n_days=4)
    GF = np.zeros(lp.GF_NF)
    GF[lp.GF_DAY_LIMIT] = 3 * po.DAY_S - 1.0
    state = dict(LF=LF, LI=LI, WF=WF, WI=WI, DF=DF, DI=DI, GF=GF)

    def no_room(now: float) -> None:  # sized for the whole run: never called
        raise AssertionError(f"no room at {now}")

    return ArrayLimiter(state, 0, no_room)


def cpu_per_call(spend, times: list[float]) -> float:
    start = time.process_time()
    for now in times:
        spend(now, 1.0)
    return (time.process_time() - start) / len(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    add_json_option(parser, "policy_adapter")
    args = parser.parse_args()
    times = np.cumsum(np.full(args.calls, 0.01)).tolist()  # 100 spends a second
    windows = int(times[-1] // 12) + 4
    _adapter(1000.0, windows).spend(0.0, 1.0)  # compiled (or loaded) before timing
    rows = []
    for _ in range(args.repeat):
        bare = bare_loop(times) / len(times)
        python = cpu_per_call(CULimiter(1000.0).spend, times)
        adapter = cpu_per_call(_adapter(1000.0, windows).spend, times)
        rows.append((bare, python, adapter))
    bare, python, adapter = (statistics.median(c) for c in zip(*rows, strict=True))
    print(f"{args.calls:,} spends, 100 a second, median of {args.repeat}")
    print(f"bare SimPy loop, per request         : {bare * 1e6:6.2f} us")
    print(f"CULimiter.spend (Python)             : {python * 1e6:6.2f} us  "
          f"({python / bare:.2f} of a bare request)")
    print(f"ArrayLimiter.spend (compiled adapter): {adapter * 1e6:6.2f} us  "
          f"({adapter / bare:.2f} of a bare request; {adapter / python:.2f}x the class)")
    write(args.json, "policy_adapter", {
        "calls": args.calls, "repeat": args.repeat,
        "bare_us_per_request": round(bare * 1e6, 3),
        "python_us_per_spend": round(python * 1e6, 3),
        "adapter_us_per_spend": round(adapter * 1e6, 3),
        "python_over_bare": round(python / bare, 3),
        "adapter_over_bare": round(adapter / bare, 3),
        "adapter_over_python": round(adapter / python, 3),
    })


if __name__ == "__main__":
    main()
