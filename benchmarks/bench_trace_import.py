"""Benchmark: import a large CSV trace, then load it for replay.

    python benchmarks/bench_trace_import.py [--rows N] [--time-format iso|ns]

Generates an N-row CSV trace (default 10 million rows, ISO-8601 timestamps, 100 API
keys, RPC / sizing / websocket mix, 2 % throttled requests each retried by its client a
few seconds later) in a temp folder, then measures, each phase in its
own process so that peak RSS (``ru_maxrss``) belongs to that phase alone:

* ``baseline``: Arrow's streaming CSV reader over the same file, no validation (the
  floor an importer cannot beat), and the RSS of an idle interpreter with the imports;
* ``import``: ``capsim trace import`` (validation, redaction, post-write scan);
* ``replay-load``: ``load_replay`` of the canonical file (retry recognition on).

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import add_json_option, write
from results import peak_rss_mib as _rss_mib

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def generate(path: Path, rows: int, time_format: str, chunk: int = 1_000_000) -> None:
    """Write a realistic synthetic CSV trace of ``rows`` rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(20240501)
    keys = pa.array([os.urandom(16).hex() for _ in range(100)])
    regions = pa.array(["eu-west-1", "us-east-1", "ap-southeast-1"])
    profiles = pa.array(["fast", "fast,fast", "fast,deep", "standard,fast,fast",
                         "deep,deep,standard,fast"])
    methods = pa.array(["svc_call", "svc_pendingBlock", "POST /v1/size", "pending-txs"])
    apis = pa.array(["rpc", "rpc", "search", "streams"])
    start_ms = 1_714_564_800_000
    t_ms = start_ms
    writer = None
    done = 0
    while done < rows:
        n = min(chunk, rows - done)
        gaps = rng.exponential(8.0, n)  # ~125 requests per second on average
        times = t_ms + np.cumsum(gaps)
        t_ms = float(times[-1])
        kind = rng.choice(4, size=n, p=[0.6, 0.15, 0.24, 0.01])
        sizing = kind == 2
        prof = rng.integers(0, len(profiles), n)
        items = np.array([1, 2, 2, 3, 4])[prof]
        status = np.where(rng.random(n) < 0.02, np.where(kind == 2, 434, -32005), 200)
        status = np.where(kind == 3, 101, status)
        hashes = os.urandom(8 * n).hex().encode()
        hash_arr = pa.Array.from_buffers(pa.string(), n, [
            None, pa.py_buffer(np.arange(0, 16 * (n + 1), 16, dtype=np.int32).tobytes()),
            pa.py_buffer(hashes)])
        if time_format == "iso":
            stamp = pa.array(np.datetime_as_string(times.astype("datetime64[ms]"), unit="ms",
                                                   timezone="UTC"))
            time_col = ("timestamp", stamp)
        else:
            time_col = ("time_ns", pa.array(times.astype(np.int64) * 1_000_000))
        mask_not_sizing = pa.array(~sizing)
        table = pa.table({
            time_col[0]: time_col[1],
            "api": apis.take(pa.array(kind)),
            "method": methods.take(pa.array(kind)),
            "X-Api-Key": keys.take(pa.array(rng.integers(0, 100, n))),
            "region": regions.take(pa.array(rng.integers(0, 3, n))),
            "items": pa.array(items, mask=~sizing),
            "profiles": pa.array(profiles.take(pa.array(prof)).to_numpy(zero_copy_only=False),
                                 mask=~sizing),
            "gas_used": pa.array(rng.integers(50_000, 3_000_000, n), mask=~sizing),
            "cu": pa.array(np.where(kind == 1, 0.0, 20.0), mask=pa.array(sizing | (kind == 3))
                           .to_numpy(zero_copy_only=False)),
            "status": pa.array(status.astype(np.int32)),
            "latency_ms": pa.array(np.round(rng.gamma(2.0, 30.0, n), 1)),
            "body_hash": hash_arr,
        })
        del mask_not_sizing
        # every throttled request is retried by its client 0.5-5 s later (same key, method
        # and body), which the replay loader must recognise and drop
        throttled = np.flatnonzero((status == 434) | (status == -32005))
        retries = table.take(pa.array(throttled))
        delay = rng.uniform(500, 5000, len(throttled))
        if time_format == "iso":
            when = pa.array(np.datetime_as_string(
                (times[throttled] + delay).astype("datetime64[ms]"), unit="ms", timezone="UTC"))
        else:
            when = pa.array((times[throttled] + delay).astype(np.int64) * 1_000_000)
        retries = retries.set_column(0, time_col[0], when)
        retries = retries.set_column(retries.schema.get_field_index("status"), "status",
                                     pa.array(np.full(len(throttled), 200, np.int32)))
        order = np.argsort(np.concatenate([times, times[throttled] + delay]), kind="stable")
        table = pa.concat_tables([table, retries]).take(pa.array(order[:n]))
        if writer is None:
            writer = pacsv.CSVWriter(str(path), table.schema)
        writer.write_table(table)
        done += n
    writer.close()


def phase_baseline(src: str) -> dict:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    idle = _rss_mib()
    t = time.perf_counter()
    rows = 0
    with open(src, "rb") as fh:
        header = fh.readline().decode().strip().split(",")
    reader = pacsv.open_csv(src, convert_options=pacsv.ConvertOptions(
        column_types={name.strip('"'): pa.binary() for name in header}))
    for batch in reader:
        rows += batch.num_rows
    return {"seconds": time.perf_counter() - t, "rows": rows, "rss_mib": _rss_mib(),
            "idle_rss_mib": idle}


def phase_import(src: str, out: str, chunk_rows: int) -> dict:
    from sim.traces.importers import import_trace

    t = time.perf_counter()
    report = import_trace(src, out, chunk_rows=chunk_rows)
    return {"seconds": time.perf_counter() - t, "rows": report.rows, "rss_mib": _rss_mib(),
            "distinct_keys": report.distinct_keys, "skipped": report.skipped}


def phase_replay(out: str) -> dict:
    import numpy as np

    from sim.traces.replay import load_replay

    t = time.perf_counter()
    trace = load_replay(out, rng=np.random.default_rng(1))
    return {"seconds": time.perf_counter() - t, "rows": len(trace), "rss_mib": _rss_mib(),
            "dropped_retries": trace.dropped_retries}


def _child(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--phase", *args], capture_output=True,
                          text=True, check=False)
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"phase {args[0]} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--time-format", choices=["iso", "ns"], default="iso")
    ap.add_argument("--chunk-rows", type=int, default=500_000)
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    ap.add_argument("--phase", nargs="+", help=argparse.SUPPRESS)
    add_json_option(ap, "trace_import")
    args = ap.parse_args()
    if args.phase:
        name, *rest = args.phase
        result = {"baseline": lambda: phase_baseline(*rest),
                  "import": lambda: phase_import(rest[0], rest[1], int(rest[2])),
                  "replay": lambda: phase_replay(*rest),
                  "generate": lambda: generate(Path(rest[0]), int(rest[1]), rest[2]) or {}
                  }[name]()
        print(json.dumps(result))
        return

    tmp = Path(tempfile.mkdtemp(prefix="capsim-bench-"))
    try:
        src, out = tmp / "trace.csv", tmp / "trace.parquet"
        t = time.perf_counter()
        _child("generate", str(src), str(args.rows), args.time_format)
        gen_s = time.perf_counter() - t
        if hasattr(os, "sync"):
            os.sync()  # flush the new file first, so the import is not charged for it
        size = src.stat().st_size
        print(f"input: {args.rows:,} rows, {size / 2**20:,.0f} MiB CSV "
              f"({args.time_format} timestamps), generated in {gen_s:.1f} s")
        base = _child("baseline", str(src))
        imp = _child("import", str(src), str(out), str(args.chunk_rows))
        rep = _child("replay", str(out))
        out_size = out.stat().st_size
        print(f"{'phase':<34}{'time s':>9}{'rows/s':>14}{'peak RSS MiB':>14}")
        for label, r in (("baseline: Arrow CSV read, no checks", base),
                         ("import (validate, redact, scan)", imp),
                         ("replay-load (retries recognised)", rep)):
            print(f"{label:<34}{r['seconds']:>9.1f}{r['rows'] / r['seconds']:>14,.0f}"
                  f"{r['rss_mib']:>14,.0f}")
        print(f"idle interpreter with pyarrow: {base['idle_rss_mib']:,.0f} MiB RSS; "
              f"output {out_size / 2**20:,.0f} MiB Parquet ({imp['rows']:,} rows, "
              f"{imp['distinct_keys']} keys, {imp['skipped']} skipped); replay kept "
              f"{rep['rows']:,} rows, dropped {rep['dropped_retries']:,} recorded retries")
        phases = {name: {"seconds": round(r["seconds"], 2), "rows": r["rows"],
                         "peak_rss_mib": round(r["rss_mib"], 1)}
                  for name, r in (("baseline", base), ("import", imp), ("replay_load", rep))}
        write(args.json, "trace_import", {
            "rows": args.rows, "time_format": args.time_format,
            "input_mib": round(size / 2**20, 1), "output_mib": round(out_size / 2**20, 1),
            "phases": phases,
            "ratio_import_to_baseline": round(imp["seconds"] / base["seconds"], 3),
            "replay_bytes_per_row": round((rep["rss_mib"] - base["idle_rss_mib"]) * 2**20
                                          / max(rep["rows"], 1)),
        })
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
