"""Peak memory of replaying a recorded trace whole: flat in the trace's length.

    python3 benchmarks/bench_replay_memory.py [--rows 500000,4000000,20000000] [--json PATH]

Writes canonical traces of 400 requests/s (RPC calls and sizing requests, each row its own
body hash, 1 % throttled so that recorded retries are looked for; row groups of 500,000
rows, as ``capsim trace import`` writes them) of each length, then runs ``capsim run
--records windows`` on one tier replaying the whole trace (the run lasts as long as the
trace: 0.5 M rows are 21 minutes, 20 M rows 14 hours) in a fresh process per point and
reads the peak RSS and the requests simulated. The floor, measured in the same run at each
length: the same scenario, as long, with a synthetic Poisson source of the same rate (the
run's own memory, which grows a little with its length). Prints each peak, its ratio to its
floor and the ratio of the longest trace's peak to the shortest's (the issue asks for at
most 1.5); writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peak_child import CHILD, parse_peak  # noqa: E402
from results import add_json_option, write  # noqa: E402

RATE = 400.0
GROUP = 500_000
KEY = "key-0123456789abcdef"  # a pseudonym, as imported traces hold
SCENARIO = """name = "replay-memory"
duration = {duration}
tiers = ["RPC + Search"]
[account]
keys = ["k1"]
[[sources]]
name = "rec"
key = "k1"
{source}
"""


_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)


def body_hashes(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` random 16-hex-digit body hashes: every row a distinct request, as in an
    imported trace. (Without them every call of a key would share one signature, and one
    refusal would mark the next 60 s of calls as recorded retries, dropped from the
    replay: the benchmark would replay a small fraction of its rows.)"""
    raw = rng.integers(0, 2**63, n, dtype=np.int64).view(np.uint8).reshape(n, 8)
    text = np.empty((n, 16), np.uint8)
    text[:, 0::2] = _HEX[raw >> 4]
    text[:, 1::2] = _HEX[raw & 15]
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n,
                                                 [None, pa.py_buffer(text.tobytes())])
    return fixed.cast(pa.binary()).cast(pa.string())


def write_trace(path: Path, rows: int, seed: int = 1) -> None:
    """A canonical trace of ``rows`` rows at :data:`RATE` per second, written group by
    group (the generator's memory stays flat too)."""
    from sim.traces.schema import META_SOURCE, META_VERSION, SCHEMA, TRACE_VERSION

    rng = np.random.default_rng(seed)
    t_ns = 1_714_564_800 * 10**9
    with pq.ParquetWriter(str(path), SCHEMA.with_metadata({META_VERSION: TRACE_VERSION}),
                          compression="zstd", write_statistics=["time_ns"]) as w:
        for start in range(0, rows, GROUP):
            n = min(GROUP, rows - start)
            gaps = rng.exponential(1e9 / RATE, n).astype(np.int64)
            times = t_ns + np.cumsum(gaps)
            t_ns = int(times[-1])
            search = rng.random(n) < 0.1
            method = np.where(search, 2, (rng.random(n) < 0.3).astype(np.int32)).astype(np.int32)
            items = np.where(search, rng.integers(1, 4, n), 0).astype(np.int32)
            status = np.where(rng.random(n) < 0.01, 434, 200).astype(np.int32)

            def dictionary(codes, values):
                return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()),
                                                      pa.array(values, pa.string()))

            cols = {
                "time_ns": pa.array(times, pa.int64()),
                "api": dictionary(search.astype(np.int32), ["rpc", "search"]),
                "method": dictionary(method, ["svc_call", "svc_pendingBlock", "POST /v1/size"]),
                "key": dictionary(np.zeros(n, np.int32), [KEY]),
                "region": dictionary(np.zeros(n, np.int32), ["eu-central"]),
                "items": pa.array(np.where(search, items, 0), pa.int32(),
                                  mask=~search),
                "profiles": pa.array(np.where(search, "fast", None), pa.string()),
                "gas_used": pa.nulls(n, pa.int64()),
                "cu": pa.array(np.where(method == 1, 10.0, 20.0), pa.float64(), mask=search),
                "status": pa.array(status, pa.int32()),
                "latency_ms": pa.array(rng.uniform(20, 80, n), pa.float64()),
                "body_hash": body_hashes(rng, n),
                "notification": pa.array(np.zeros(n, bool), pa.bool_()),
                "retry_after_s": pa.nulls(n, pa.float64()),
            }
            w.write_table(pa.table(cols, schema=SCHEMA), row_group_size=GROUP)
            del cols
        w.add_key_value_metadata({META_SOURCE: "bench"})


def run_peak(scenario: Path, out: Path) -> tuple[int, float, int]:
    """(peak RSS bytes, seconds, requests simulated) of ``capsim run`` on ``scenario`` in
    a fresh process."""
    args = ["run", str(scenario), "--out", str(out), "-q", "--records", "windows",
            "--max-requests", "10000000000"]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                          text=True, check=True)
    secs = time.perf_counter() - start
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return parse_peak(proc.stdout)[0], secs, int(summary["tiers"][0]["requests"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="500000,4000000,20000000")
    add_json_option(ap, "replay_memory")
    a = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    counts = [int(x) for x in a.rows.split(",")]
    mib = 2**20
    points = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for rows in counts:
            # the whole trace is replayed: the run lasts as long as the trace
            duration = math.ceil(rows / RATE) + 1
            floor_scn = tmp / f"floor-{rows}.toml"
            floor_scn.write_text(SCENARIO.format(
                duration=duration, source=f'arrival = {{ process = "poisson", rate = {RATE} }}'))
            floor, floor_s, floor_n = run_peak(floor_scn, tmp / f"out-floor-{rows}")
            trace = tmp / f"trace-{rows}.parquet"
            t0 = time.perf_counter()
            write_trace(trace, rows)
            made = time.perf_counter() - t0
            scn = tmp / f"replay-{rows}.toml"
            scn.write_text(SCENARIO.format(duration=duration, source=f'trace = "{trace}"'))
            peak, secs, replayed = run_peak(scn, tmp / f"out-{rows}")
            points.append({"rows": rows, "duration_s": duration, "replayed_requests": replayed,
                           "peak_rss_bytes": peak, "seconds": secs,
                           "file_bytes": trace.stat().st_size,
                           "floor_requests": floor_n, "floor_peak_rss_bytes": floor,
                           "floor_seconds": floor_s, "ratio_to_floor": peak / floor})
            print(f"{rows:>11,} rows ({trace.stat().st_size / mib:.0f} MiB file, made in "
                  f"{made:.0f} s), {replayed:,} replayed over {duration:,} s: peak "
                  f"{peak / mib:.0f} MiB in {secs:.0f} s; floor ({floor_n:,} synthetic "
                  f"requests) {floor / mib:.0f} MiB in {floor_s:.0f} s; "
                  f"{peak / floor:.2f}x the floor")
            trace.unlink()
            # written after every point: a long run stopped part way keeps what it measured
            ratio = points[-1]["peak_rss_bytes"] / points[0]["peak_rss_bytes"]
            write(a.json, "replay_memory", {
                "rate_per_s": RATE, "rows_asked": counts, "points": points,
                "ratio_longest_to_shortest": ratio}, load_before=load_before)
        print(f"peak at {counts[-1]:,} rows / at {counts[0]:,} rows: {ratio:.2f} "
              f"(at most 1.5 asked)")


if __name__ == "__main__":
    main()
