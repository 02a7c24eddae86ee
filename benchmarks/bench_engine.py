"""Simulated attempts per CPU-second: the full model vs a bare SimPy loop, same run.

    python3 benchmarks/bench_engine.py [--duration S] [--tier NAME]... [--repeat N]

The bare loop is the cheapest SimPy program with the same shape as the workload: one
generator feeding N requests at the default scenario's open-loop times, one process per
request, one timeout per process (about four SimPy events per request). The model is
`capsim`'s TierRun on the default scenario (every tier unless --tier), attempts (HTTP
requests and websocket handshakes) counted from its records; it is measured with the
scenario's websocket clients (streams on: the issue's figure) and without them (HTTP
only). The floor is SimPy alone doing what the model cannot avoid per attempt: one event
at the send, one at the service and one at completion, each with a callback that only
reschedules, run as the model runs them (its environment's inline loop, direct pushes).

``--breakdown`` adds, in each repeat, the least work of an admitted attempt besides its
events, piece by piece on the real classes (:func:`least_work`), and the ratio a model
doing only that and the floor would reach: an upper bound for this model in CPython.

Each repeat measures bare, floor, model and model without streams in turn for each tier
(the bare loop and the floor run once per tier, over the same arrival times), so the
ratios are taken between figures of the same moments on a shared machine; the medians
over ``--repeat`` (default 3) are printed, with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from heapq import heappush

import numpy as np
import simpy
from results import add_json_option, write
from simpy.events import NORMAL, Event

from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.model import recorder as rc
from sim.model.aggregates import MinuteOutcomes
from sim.model.engine import Request, TierRun
from sim.model.environment import Environment
from sim.model.transport import ClientPool
from sim.policy.connections import AccountConnections
from sim.policy.limiter import CULimiter
from sim.workload.demand import build_plan


def bare_loop(times: list[float]) -> float:
    """CPU seconds of a minimal SimPy loop over the same arrival times."""
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
    return time.process_time() - start


class _Hop(Event):
    """An event scheduled directly (no Timeout), as the model's requests are."""

    _ok = True


def events_floor(times: list[float], hops: int = 3) -> float:
    """CPU seconds of SimPy processing ``hops`` events per request (the first at the
    arrival time, each next 25 ms later) with callbacks that only reschedule: the cost
    of the events alone, fed in 1-second slices like the model, on the model's
    environment (its inline run loop) and pushed onto the heap as the model pushes."""
    env = Environment()
    schedule, queue, eid = env.schedule, env._queue, env._eid

    def hop(ev):
        ev.left -= 1
        if ev.left:
            ev.callbacks = hops_cb
            heappush(queue, (env._now + 0.025, NORMAL, next(eid), ev))

    hops_cb = (hop,)

    n, i = len(times), 0
    tick = _Hop(env)

    def feed(ev):
        nonlocal i
        until = env.now + 1.0
        while i < n and times[i] < until:
            ev = _Hop(env)
            ev.callbacks, ev.left = hops_cb, hops
            schedule(ev, NORMAL, times[i] - env.now)
            i += 1
        if i < n:
            tick.callbacks = [feed]
            schedule(tick, NORMAL, until - env.now)

    tick.callbacks = [feed]
    schedule(tick)
    start = time.process_time()
    env.run()
    return time.process_time() - start


def _per_call(fn, n: int) -> float:
    """CPU microseconds per call of ``fn(i)`` over ``i = 0 .. n-1``, less the cost of the
    loop and of calling an empty function."""
    def cpu(f) -> float:
        start = time.process_time()
        for i in range(n):
            f(i)
        return time.process_time() - start

    return max(0.0, cpu(fn) - cpu(lambda i: None)) / n * 1e6


def _row_layout(columns, fixed: dict, *varying: str) -> tuple:
    """A row of ``columns`` (``fixed`` values by name, 0 elsewhere) as a list, and the
    positions of the ``varying`` columns in it."""
    names = [name for name, _ in columns]
    return ([fixed.get(name, 0) for name in names], *(names.index(v) for v in varying))


def least_work(n: int = 200_000) -> dict[str, float]:
    """CPU microseconds per admitted attempt of what the model cannot leave out, each
    piece measured alone on the real classes: the request's record (one object), the
    limiter's reserve and settle (with a daily ledger, as every default tier has), a
    stream taken from and given back to an HTTP/2 connection, the attempt and request
    rows (packed, converted in chunks, aggregated per minute); the three events are the
    floor's. Left out: pacing, admission checks, retries, workers, websockets."""
    lim = CULimiter(1e18, daily_allowance_cu=1e18)
    pool = ClientPool(AccountConnections(), "h", Environment(), rtt_s=0.05, max_streams=32,
                      max_connections=8, connect_rtts=1.0, idle_timeout_s=1e9, reuse=True,
                      on_ready=None)
    rec = rc.Recorder(on_chunk=MinuteOutcomes())  # the model's chunk size and aggregate
    abuf, qbuf, apack, qpack = rec.attempt_buf, rec.request_buf, rc.ATTEMPT_ROW.pack, \
        rc.REQUEST_ROW.pack
    abytes, qbytes, flush = rec.attempt_chunk_bytes, rec.request_chunk_bytes, rec.flush
    nan = float("nan")

    def request(i):
        Request(i, 0, 1, 0, 0, 20.0, 18.0, 0.01, i * 1e-3, 0.025)

    def limiter(i):
        now = i * 1e-3
        lim.settle(now + 0.01, lim.reserve(now, 20.0, 18.0), 20.0, 18.0)

    def stream(i):
        now = i * 1e-3
        _, conn = pool.acquire(now)
        conn.release_at(now + 0.002)

    # One row of each table, its values named by column (the layout's one home is
    # recorder.ATTEMPT_COLUMNS / REQUEST_COLUMNS: a column added there is filled here).
    # Laid out once, outside the timed call: per row only the id and times change, as
    # the model's positional pack (building the row by name each call measured 4x it).
    a_row, a_id, a_send, a_end = _row_layout(
        rc.ATTEMPT_COLUMNS, {"attempt": 1, "method": 1, "cu_reserved": 20.0,
                             "cu_settled": 18.0, "retry_after_s": nan, "phantom": False,
                             "stream_wait_s": 0.0}, "request_id", "t_send", "t_end")
    q_row, q_id, q_first, q_end = _row_layout(
        rc.REQUEST_COLUMNS, {"method": 1, "attempts": 1}, "request_id", "t_first", "t_end")

    def rows(i):
        nonlocal abuf, qbuf
        t = i * 1e-3
        a_row[a_id], a_row[a_send], a_row[a_end] = i, t, t + 0.05
        q_row[q_id], q_row[q_first], q_row[q_end] = i, t, t + 0.05
        abuf += apack(*a_row)
        qbuf += qpack(*q_row)
        if len(abuf) >= abytes or len(qbuf) >= qbytes:
            flush()

    return {name: _per_call(fn, n) for name, fn in
            (("request object", request), ("limiter reserve + settle", limiter),
             ("HTTP/2 stream acquire + release", stream), ("attempt + request rows", rows))}


def model(plan, tier) -> tuple[float, int, int]:
    """CPU seconds of the full model on ``tier``, its attempt count and the number of
    SimPy events it scheduled."""
    run = TierRun(plan, tier)
    start = time.process_time()
    result = run.run()
    cpu = time.process_time() - start
    attempts = len(result.attempt_sink.read(["outcome"])["outcome"])
    return cpu, attempts, next(run.env._eid)  # the environment's event counter (from 0)


def one_repeat(plans, tiers, times) -> tuple[float, ...]:
    """Per-CPU-second rates of bare, floor, model and model without streams, measured
    tier by tier in turn (so that each figure sees the same load), with the attempt and
    event counts of the model."""
    cpu = [0.0, 0.0, 0.0, 0.0]
    n_on = n_off = ev_on = ev_off = 0
    for tier in tiers:
        cpu[0] += bare_loop(times)
        cpu[1] += events_floor(times)
        c, n, e = model(plans[True], tier)
        cpu[2], n_on, ev_on = cpu[2] + c, n_on + n, ev_on + e
        c, n, e = model(plans[False], tier)
        cpu[3], n_off, ev_off = cpu[3] + c, n_off + n, ev_off + e
    k = len(tiers) * len(times)
    return k / cpu[0], k / cpu[1], n_on / cpu[2], n_off / cpu[3], n_on, ev_on, n_off, ev_off


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3600.0)
    parser.add_argument("--tier", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenario", default=None, help="scenario file (default: built-in)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also the least work per attempt, piece by piece, and the "
                             "ratio it leaves the model at best")
    add_json_option(parser, "engine")
    args = parser.parse_args()
    plans = {}
    for streams in (True, False):
        overrides = [f"duration={args.duration}"] + ([] if streams else ["streams=[]"])
        loaded = load(args.scenario, overrides)
        plans[streams] = build_plan(loaded)
    tiers = [find_tier(t, loaded.tiers) for t in args.tier] or list(loaded.tiers)
    times = np.concatenate([b.t for b in plans[True].demand_blocks()]).tolist()
    load_before = os.getloadavg()
    rows, breakdowns = [], []
    for _ in range(args.repeat):
        bare, floor, on, off, n_on, ev_on, n_off, ev_off = one_repeat(plans, tiers, times)
        rows.append((bare, floor, on, off, on / bare, off / bare, floor / bare))
        if args.breakdown:  # in each repeat, beside the ratios: medians of the same moments
            breakdowns.append(least_work())
    med = [statistics.median(c) for c in zip(*rows, strict=True)]
    bare, floor, on, off, r_on, r_off, r_floor = med
    load_after = os.getloadavg()
    print(f"scenario: {loaded.scenario.name}, {args.duration:.0f} s simulated, "
          f"{len(tiers)} tier(s); median of {args.repeat}; load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"bare SimPy loop (process per request) : {bare:10,.0f} requests / CPU-s")
    print(f"SimPy floor (3 bare events / request) : {floor:10,.0f} requests / CPU-s"
          f"   ratio {r_floor:5.2f}")
    print(f"capsim model, streams on              : {on:10,.0f} attempts / CPU-s"
          f"   ratio {r_on:5.2f}   ({n_on:,} attempts, {ev_on / n_on:.2f} SimPy events"
          " / attempt)")
    print(f"capsim model, no streams              : {off:10,.0f} attempts / CPU-s"
          f"   ratio {r_off:5.2f}   ({n_off:,} attempts, {ev_off / n_off:.2f} SimPy events"
          " / attempt)")
    print("per repeat (ratio on / off / floor): " + "; ".join(
        f"{r[4]:.2f} / {r[5]:.2f} / {r[6]:.2f}" for r in rows))
    figures = {
        "scenario": loaded.scenario.name, "duration_s": args.duration, "tiers": len(tiers),
        "repeat": args.repeat,
        "bare_requests_per_cpu_s": round(bare), "floor_requests_per_cpu_s": round(floor),
        "model_streams_on_attempts_per_cpu_s": round(on),
        "model_no_streams_attempts_per_cpu_s": round(off),
        "ratio_streams_on": round(r_on, 3), "ratio_no_streams": round(r_off, 3),
        "ratio_floor": round(r_floor, 3),
        "events_per_attempt_streams_on": round(ev_on / n_on, 3),
        "events_per_attempt_no_streams": round(ev_off / n_off, 3),
        "attempts_streams_on": n_on, "attempts_no_streams": n_off,
    }
    if args.breakdown:
        pieces = {name: statistics.median(b[name] for b in breakdowns)
                  for name in breakdowns[0]}
        events_us = 1e6 / floor
        print(f"least work per admitted attempt (CPU us, each piece alone; median of "
              f"{args.repeat}):")
        print(f"  {'3 SimPy events (the floor)':34s} {events_us:6.2f}")
        for name, us in pieces.items():
            print(f"  {name:34s} {us:6.2f}")
        least = events_us + sum(pieces.values())
        print(f"  {'sum':34s} {least:6.2f}   bare loop: {1e6 / bare:.2f} us / request")
        print(f"best ratio a model doing only this could reach: {1e6 / least / bare:.2f}"
              f"   (the model: {1e6 / off:.2f} us / attempt without streams, "
              f"{1e6 / on:.2f} with)")
        figures["least_work_us"] = {"3 SimPy events (the floor)": round(events_us, 3),
                                    **{k: round(v, 3) for k, v in pieces.items()},
                                    "sum": round(least, 3)}
        figures["us_per_request_bare"] = round(1e6 / bare, 3)
        figures["us_per_attempt_no_streams"] = round(1e6 / off, 3)
        figures["us_per_attempt_streams_on"] = round(1e6 / on, 3)
        figures["best_ratio"] = round(1e6 / least / bare, 3)
    write(args.json, "engine", figures, load_before=round(load_before[0], 2))


if __name__ == "__main__":
    main()
