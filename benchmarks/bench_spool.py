"""What a tier's spool costs the worker: CPU seconds to write and to read back one tier's
attempt rows as Parquet row groups, per writer setting, and the bytes per row.

    python3 benchmarks/bench_spool.py [--duration 3600] [--tier "All 3 APIs"] [--repeat 3]

The rows are a real run's (default scenario, one tier, kept in memory), written chunk by
chunk as :class:`sim.model.sinks.ParquetSink` does; medians of ``--repeat`` rounds of
``time.process_time``. The spool is temporary (read once or twice, then deleted), so the
setting to pick is the cheapest to write that keeps the file small.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
from results import add_json_option
from results import write as write_results

from sim.config.resolved import load
from sim.config.tiers import find_tier
from sim.model.engine import TierRun
from sim.model.recorder import ATTEMPT_COLUMNS
from sim.model.sinks import SPOOL_OPTIONS, ParquetSink
from sim.workload.demand import build_plan

SETTINGS = {
    "zstd + dictionary (before)": {"compression": "zstd", "use_dictionary": True},
    "lz4 + dictionary": {"compression": "lz4", "use_dictionary": True},
    "lz4, no dictionary": {"compression": "lz4", "use_dictionary": False},
    "none, no dictionary": {"compression": "none", "use_dictionary": False},
}


def write(chunks, path: str, options: dict) -> float:
    schema = ParquetSink(ATTEMPT_COLUMNS, path)._schema()
    start = time.process_time()
    writer = pq.ParquetWriter(path, schema, **options)
    for c in chunks:
        writer.write_table(pa.Table.from_arrays([c[n] for n, _ in ATTEMPT_COLUMNS],
                                                schema=schema))
    writer.close()
    return time.process_time() - start


def read(path: str) -> float:
    start = time.process_time()
    for _ in ParquetSink(ATTEMPT_COLUMNS, path).chunks():
        pass
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="3600")
    parser.add_argument("--tier", default="All 3 APIs")
    parser.add_argument("--repeat", type=int, default=3)
    add_json_option(parser, "spool")
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    loaded = load(None, [f"duration={args.duration}"])
    result = TierRun(build_plan(loaded), find_tier(args.tier)).run()
    chunks = list(result.attempt_sink.chunks())
    rows = sum(len(c["outcome"]) for c in chunks)
    print(f"default scenario, tier {args.tier!r}, duration {args.duration}: {rows:,} attempt "
          f"rows in {len(chunks)} chunks; medians of {args.repeat} (CPU s)")
    settings = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in SETTINGS.items():
            path = os.path.join(tmp, "spool.parquet")
            w = statistics.median(write(chunks, path, options) for _ in range(args.repeat))
            r = statistics.median(read(path) for _ in range(args.repeat))
            size = os.path.getsize(path)
            mark = "  <- SPOOL_OPTIONS" if options == SPOOL_OPTIONS else ""
            print(f"{name:28s} write {w:6.3f} s  read {r:6.3f} s  "
                  f"{size / rows:5.1f} B/row{mark}")
            settings[name] = {"write_cpu_s": round(w, 4), "read_cpu_s": round(r, 4),
                              "bytes_per_row": round(size / rows, 2),
                              "spool_options": options == SPOOL_OPTIONS}
    write_results(args.json, "spool", {"tier": args.tier, "duration_s": float(args.duration),
                               "rows": rows, "repeat": args.repeat, "settings": settings},
          load_before=load_before)


if __name__ == "__main__":
    main()
