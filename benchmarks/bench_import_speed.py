"""Import speed (CSV, JSONL, HAR) against Arrow's readers, and HAR import memory.

    python3 benchmarks/bench_import_speed.py [--rows 1000000] [--har 300000,3000000]
        [--repeats 2] [--json PATH]

Generates ``--rows`` rows (``bench_trace_import.generate``: ISO-8601 timestamps, 100 keys,
RPC / sizing / websocket mix, 2 % throttled and retried) as CSV and as JSONL (the same
values, numbers as JSON numbers), and HAR files of ``--har`` entries (JSON-RPC POSTs with
replies, a key in the URL path, as a proxy records them). Each measurement runs in a
fresh process; repeats alternate floor and import so that both see the same machine
load, and the best of each is kept. Floors, measured in the same run:

* CSV: Arrow's streaming CSV reader (``pyarrow.csv.open_csv``) and the Parquet writer;
* JSONL: Arrow's JSON reader (``pyarrow.json.read_json``) and the Parquet writer;
* HAR: the same entries one per line, read by Arrow's JSON reader (no HAR reader exists).

Prints rows/s of each import and its ratio to its floor (the issue asks for at least 0.5
for CSV and JSONL), by wall time and by CPU time (user + system, every thread: the work
done, which a busy machine disturbs less than the wall time), and the peak RSS of each
HAR import (at most 1 GiB asked); writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import peak_rss_mib as _peak_mib

HERE = Path(__file__).resolve().parent
KEYS = [f"{i:02d}" + "3f9a2c71d04e4b8e9a6c15f2b7d08e"[:30] for i in range(20)]


# -- inputs --------------------------------------------------------------------------

def make_csv_jsonl(csv_path: Path, jsonl_path: Path, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    sys.path.insert(0, str(HERE))
    from bench_trace_import import generate

    generate(csv_path, rows, "iso")
    names = ["items", "gas_used", "status"]
    reader = pacsv.open_csv(csv_path, convert_options=pacsv.ConvertOptions(
        column_types={"timestamp": pa.string(), "X-Api-Key": pa.string(),
                      "body_hash": pa.string(), **{n: pa.int64() for n in names}}))
    with open(jsonl_path, "w") as fh:
        for batch in reader:
            for row in batch.to_pylist():
                fh.write(json.dumps(row, separators=(",", ":")) + "\n")


def make_har(path: Path, entries: int, lines_path: Path | None = None) -> None:
    """A HAR of ``entries`` JSON-RPC POSTs, written entry by entry; with ``lines_path``,
    the same entries one per line (the floor's input)."""
    t0 = 1_714_564_800.0
    methods = ["eth_call", "eth_getLogs", "eth_blockNumber", "eth_getBalance"]
    with open(path, "w") as fh, open(lines_path or os.devnull, "w") as lines:
        fh.write('{"log": {"version": "1.2", "creator": {"name": "bench", "version": "1"}, '
                 '"pages": [], "entries": [\n')
        for i in range(entries):
            t = t0 + i * 0.0025
            stamp = (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
                     + f".{int(t * 1000) % 1000:03d}Z")
            body = json.dumps({"jsonrpc": "2.0", "id": i, "method": methods[i % 4],
                               "params": [{"to": "0x" + "ab" * 20}, "latest"]})
            status = 434 if i % 50 == 0 else 200
            reply = json.dumps({"jsonrpc": "2.0", "id": i, "result": "0x" + "0" * 64})
            entry = {"startedDateTime": stamp, "time": 20.0 + i % 7,
                     "request": {"method": "POST",
                                 "url": f"https://rpc.eu-west-1.example.com/v2/{KEYS[i % 20]}",
                                 "httpVersion": "HTTP/2",
                                 "headers": [{"name": "content-type",
                                              "value": "application/json"},
                                             {"name": "user-agent", "value": "bench/1.0"}],
                                 "queryString": [], "cookies": [], "headersSize": -1,
                                 "bodySize": len(body),
                                 "postData": {"mimeType": "application/json", "text": body}},
                     "response": {"status": status, "statusText": "", "httpVersion": "HTTP/2",
                                  "headers": [{"name": "content-type",
                                               "value": "application/json"}],
                                  "cookies": [], "content": {"size": len(reply),
                                                             "mimeType": "application/json",
                                                             "text": reply},
                                  "redirectURL": "", "headersSize": -1, "bodySize": -1},
                     "timings": {"send": 0, "wait": 20, "receive": 0}}
            text = json.dumps(entry)
            fh.write(text + (",\n" if i + 1 < entries else "\n"))
            lines.write(text + "\n")
        fh.write("]}}\n")


# -- phases (each in its own process) -------------------------------------------------

def phase(name: str, src: str, out: str) -> dict:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    if name == "import":  # what the import loads, loaded before the clock starts
        import pandas  # noqa: F401

        from sim.traces.importers import import_trace
    start = time.perf_counter()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    if name == "import":
        rows = import_trace(src, out).rows
    elif name == "floor-csv":
        reader = pacsv.open_csv(src)
        rows = 0
        with pq.ParquetWriter(out, reader.schema, compression="zstd") as w:
            for batch in reader:
                w.write_batch(batch)
                rows += batch.num_rows
    else:  # floor-json
        table = pajson.read_json(src)
        pq.write_table(table, out, compression="zstd")
        rows = table.num_rows
    assert isinstance(rows, int) and pa is not None
    end = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (end.ru_utime - cpu.ru_utime) + (end.ru_stime - cpu.ru_stime)
    return {"seconds": time.perf_counter() - start, "cpu_seconds": cpu_s, "rows": rows,
            "peak_mib": _peak_mib()}


def child(name: str, src: Path, out: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--phase", name, str(src), str(out)],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        sys.stderr.write(proc.stderr[-2000:])
        raise SystemExit(f"{name} on {src.name} failed")
    out.unlink(missing_ok=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def best_pair(floor: str, src: Path, floor_src: Path, tmp: Path, repeats: int):
    """The fastest floor and the fastest import of ``repeats`` alternated runs."""
    floors, imports = [], []
    for _ in range(repeats):
        floors.append(child(floor, floor_src, tmp / "floor.parquet"))
        imports.append(child("import", src, tmp / "import.parquet"))
    return (min(floors, key=lambda r: r["seconds"]), min(imports, key=lambda r: r["seconds"]))


def main() -> None:
    sys.path.insert(0, str(HERE))
    from results import add_json_option

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--har", default="300000,3000000")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--har-floor-max", type=int, default=300_000,
                    help="measure the HAR floor (and repeats) only up to this many entries")
    add_json_option(ap, "import_speed")
    ap.add_argument("--phase", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    if a.phase:
        print(json.dumps(phase(*a.phase)))
        return
    results: dict = {"rows": a.rows, "formats": {}, "har_memory": []}
    with tempfile.TemporaryDirectory(prefix="capsim-import-") as tmp:
        tmp = Path(tmp)
        csv_path, jsonl_path = tmp / "t.csv", tmp / "t.jsonl"
        if a.rows:
            make_csv_jsonl(csv_path, jsonl_path, a.rows)
            os.sync()
        print(f"{'format':<8}{'rows':>11}{'import s':>10}{'rows/s':>11}{'floor s':>9}"
              f"{'floor rows/s':>14}{'ratio':>7}{'peak MiB':>10}")
        tabular = [("csv", csv_path, "floor-csv"), ("jsonl", jsonl_path, "floor-json")]
        for fmt, src, floor in tabular if a.rows else []:
            f, i = best_pair(floor, src, src, tmp, a.repeats)
            ratio = f["seconds"] / i["seconds"]
            cpu_ratio = f["cpu_seconds"] / i["cpu_seconds"]
            results["formats"][fmt] = {"import": i, "floor": f, "ratio_to_floor": ratio,
                                       "cpu_ratio_to_floor": cpu_ratio}
            print(f"{fmt:<8}{i['rows']:>11,}{i['seconds']:>10.1f}"
                  f"{i['rows'] / i['seconds']:>11,.0f}"
                  f"{f['seconds']:>9.1f}{f['rows'] / f['seconds']:>14,.0f}{ratio:>7.2f}"
                  f"{i['peak_mib']:>10,.0f}   (CPU time: import {i['cpu_seconds']:.1f} s, "
                  f"floor {f['cpu_seconds']:.1f} s, ratio {cpu_ratio:.2f})")
        csv_path.unlink(missing_ok=True)
        jsonl_path.unlink(missing_ok=True)
        for n in [int(x) for x in a.har.split(",") if x]:
            har, lines = tmp / "t.har", tmp / "entries.jsonl"
            with_floor = n <= a.har_floor_max
            make_har(har, n, lines if with_floor else None)
            os.sync()
            if with_floor:
                f, i = best_pair("floor-json", har, lines, tmp, a.repeats)
            else:  # memory is the point here: the import alone, once
                f, i = None, child("import", har, tmp / "import.parquet")
            ratio = f["seconds"] / i["seconds"] if f else None
            size = har.stat().st_size
            results["har_memory"].append({"entries": n, "file_bytes": size, "import": i,
                                          "floor": f, "ratio_to_floor": ratio})
            floor_text = (f"{f['seconds']:>9.1f}{f['rows'] / f['seconds']:>14,.0f}{ratio:>7.2f}"
                          if f else f"{'-':>9}{'-':>14}{'-':>7}")
            print(f"{'har':<8}{i['rows']:>11,}{i['seconds']:>10.1f}"
                  f"{i['rows'] / i['seconds']:>11,.0f}{floor_text}"
                  f"{i['peak_mib']:>10,.0f}   ({n:,} entries, {size / 2**20:,.0f} MiB file)")
            har.unlink()
            lines.unlink(missing_ok=True)
    sys.path.insert(0, str(HERE))
    from results import write

    write(a.json, "import_speed", results, load_before=load_before)


if __name__ == "__main__":
    main()
