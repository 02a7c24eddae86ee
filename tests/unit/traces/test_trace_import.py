"""Importers: round trips from every sample format, invalid rows, keys never surviving.

Expected values are counted straight from the sample files with the standard library
(csv, json), not with the importer's own code.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sim.core.errors import CapsimError
from sim.core.pseudonyms import pseudonym
from sim.traces.formats_har import region_from_host
from sim.traces.importers import import_trace
from sim.traces.replay import load_replay
from sim.traces.schema import SCHEMA

SAMPLES = Path(__file__).resolve().parents[3] / "workloads" / "traces"
KEY_RE = re.compile(r"\b[0-9a-f]{32}\b")
T0 = 1_714_564_800_000_000_000  # 2024-05-01T12:00:00Z


def sample_keys() -> set[str]:
    keys: set[str] = set()
    for path in SAMPLES.iterdir():
        # the gateway and client calibration samples hold other accounts' keys
        if path.suffix != ".parquet" and not path.name.startswith(("gateway-", "client-")):
            keys |= set(KEY_RE.findall(path.read_text()))
    return keys


def read(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def sizing_of(rows) -> list[tuple[int, str]]:
    return sorted((r["items"], r["profiles"]) for r in rows if r["method"] == "POST /v1/size")


def replay_all(path):
    return load_replay(path, drop_recorded_retries=False, rng=np.random.default_rng(0))


def assert_replay_matches(path, methods: Counter, n: int):
    trace = replay_all(path)
    assert len(trace) == n
    got = Counter(trace.method_categories[i] for i in trace.method)
    assert got == methods
    assert np.all(np.diff(trace.t_s) >= 0) and trace.t_s[0] == 0.0


# -- expectations from the raw samples ---------------------------------------------------

def expect_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    methods = Counter(r["method"] for r in rows)
    sizing = sorted((int(r["items"]), r["profiles"]) for r in rows
                    if r["method"] == "POST /v1/size")
    return len(rows), methods, sizing


def expect_jsonl(path):
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return (len(rows), Counter(r["method"] for r in rows),
            sorted((r["items"], r["profiles"]) for r in rows if "items" in r))


def _log_bodies(path):
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            start = min(i for i in (line.find("{"), line.find("[")) if i >= 0)
            yield line, json.loads(line[start:])


def expect_rpc_log(path):
    methods = Counter()
    for _, body in _log_bodies(path):
        for env in body if isinstance(body, list) else [body]:
            methods[env["method"]] += 1
    return sum(methods.values()), methods, []


def expect_size_log(path):
    sizing = [(len(b["items"]), ",".join(i["settings"]["profile"] for i in b["items"]))
              for _, b in _log_bodies(path)]
    return len(sizing), Counter({"POST /v1/size": len(sizing)}), sorted(sizing)


def expect_har(path):
    """Classify the sample's entries by hand (the sample only uses these shapes)."""
    methods, sizing, regions, statuses = Counter(), [], Counter(), Counter()
    for e in json.loads(Path(path).read_text())["log"]["entries"]:
        req = e["request"]
        url = urlsplit(req["url"])
        headers = {h["name"].lower(): h["value"] for h in req["headers"]}
        if req["method"] == "OPTIONS" or "example-chain.io" not in url.netloc:
            continue
        region = url.hostname.split(".")[1]
        if headers.get("upgrade") == "websocket":
            name = url.path if url.path.startswith("/v1/") else url.path.strip("/")
            got = [name]
            status = [e["response"]["status"]]
        elif url.path == "/v1/size":
            body = json.loads(req["postData"]["text"])
            sizing.append((len(body["items"]),
                           ",".join(i["settings"]["profile"] for i in body["items"])))
            got, status = ["POST /v1/size"], [e["response"]["status"]]
        elif url.path.startswith("/v1/"):
            got, status = [f"{req['method']} {url.path}"], [e["response"]["status"]]
        else:
            body = json.loads(req["postData"]["text"])
            reply = json.loads(e["response"]["content"]["text"])
            envs = body if isinstance(body, list) else [body]
            replies = reply if isinstance(reply, list) else [reply]
            by_id = {r.get("id"): r for r in replies}
            got = [env["method"] for env in envs]
            status = [by_id.get(env["id"], {}).get("error", {}).get("code", 200)
                      for env in envs]
        methods.update(got)
        regions[region] += len(got)
        statuses.update(status)
    return sum(methods.values()), methods, sorted(sizing), regions, statuses


EXPECT = {"sample.csv": ("csv", expect_csv), "sample.jsonl": ("jsonl", expect_jsonl),
          "sample-rpc.log": ("rpc-log", expect_rpc_log),
          "sample-size.log": ("size-log", expect_size_log)}


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_round_trip_of_each_text_sample(tmp_path, name):
    fmt, expect = EXPECT[name]
    n, methods, sizing = expect(SAMPLES / name)
    out = tmp_path / "t.parquet"
    report = import_trace(SAMPLES / name, out, fmt="auto")
    assert report.format == fmt and report.rows == n and report.skipped == 0
    rows = read(out)
    assert len(rows) == n
    assert Counter(r["method"] for r in rows) == methods
    assert sizing_of(rows) == sizing
    assert pq.read_schema(out).remove_metadata() == SCHEMA
    meta = pq.read_metadata(out).metadata
    assert meta[b"capsim.trace_version"] == b"1" and meta[b"capsim.source_file"] == name.encode()
    assert_replay_matches(out, methods, n)


def test_round_trip_of_the_har_sample(tmp_path):
    n, methods, sizing, regions, statuses = expect_har(SAMPLES / "sample.har")
    out = tmp_path / "t.parquet"
    report = import_trace(SAMPLES / "sample.har", out)
    rows = read(out)
    assert report.rows == len(rows) == n
    assert Counter(r["method"] for r in rows) == methods
    assert sizing_of(rows) == sizing
    assert Counter(r["region"] for r in rows) == regions
    assert Counter(r["status"] for r in rows) == statuses
    assert statuses[-32005] >= 1  # the sample carries JSON-RPC throttles in 200 replies
    # the preflight and the static asset are counted, not silently dropped
    entries = json.loads((SAMPLES / "sample.har").read_text())["log"]["entries"]
    not_requests = sum(1 for e in entries if e["request"]["method"] == "OPTIONS"
                       or "example-chain.io" not in e["request"]["url"])
    assert not_requests >= 2 and sum(report.ignored.values()) == not_requests
    assert_replay_matches(out, methods, n)


SAMPLE_SECRET = "capsim-sample-traces"
"""``CAPSIM_PSEUDONYM_SECRET`` that sample.parquet was made with:
``capsim trace import workloads/traces/sample.csv --format csv --out .../sample.parquet``."""


def test_round_trip_of_the_parquet_sample(tmp_path, monkeypatch):
    """sample.parquet was produced from sample.csv by this importer; re-importing it as
    Parquet must keep every row, and its contents must match the CSV."""
    monkeypatch.setenv("CAPSIM_PSEUDONYM_SECRET", SAMPLE_SECRET)
    n, methods, sizing = expect_csv(SAMPLES / "sample.csv")
    out = tmp_path / "t.parquet"
    report = import_trace(SAMPLES / "sample.parquet", out, fmt="parquet")
    rows = read(out)
    assert report.rows == n and Counter(r["method"] for r in rows) == methods
    assert sizing_of(rows) == sizing
    # sample.parquet predates the optional notification and retry_after_s columns
    assert all(r.pop("notification") is None for r in rows)
    assert all(r.pop("retry_after_s") is None for r in rows)
    assert rows == read(SAMPLES / "sample.parquet")
    with open(SAMPLES / "sample.csv", newline="") as fh:
        src = list(csv.DictReader(fh))
    assert [r["key"] for r in rows] == [pseudonym(s["X-Api-Key"]) for s in src]
    stamps = [datetime.fromisoformat(s["timestamp"].replace("Z", "+00:00")) for s in src]
    assert [r["time_ns"] // 1_000_000 for r in rows] == [
        round(t.timestamp() * 1000) for t in stamps]
    assert_replay_matches(out, methods, n)


def test_the_same_rows_in_csv_and_jsonl_import_identically(tmp_path):
    rows = [{"time_ns": T0 + i * 1_500_000_000, "api": "search" if i % 3 else "rpc",
             "method": "POST /v1/size" if i % 3 else "svc_call",
             "key": "3f9a2c71d04e4b8e9a6c15f2b7d08e43", "items": 2 if i % 3 else None,
             "profiles": "fast,deep" if i % 3 else None, "status": 434 if i == 4 else 200,
             "cu": 20.0 if i % 3 == 0 else None, "gas_used": 12345 if i % 3 else None}
            for i in range(12)]
    with open(tmp_path / "a.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
    with open(tmp_path / "a.jsonl", "w") as fh:
        fh.writelines(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n"
                      for r in rows)
    import_trace(tmp_path / "a.csv", tmp_path / "c.parquet", chunk_rows=5)
    import_trace(tmp_path / "a.jsonl", tmp_path / "j.parquet", chunk_rows=5)
    got = read(tmp_path / "c.parquet")
    assert got == read(tmp_path / "j.parquet")
    assert [r["time_ns"] for r in got] == [r["time_ns"] for r in rows]
    assert pq.ParquetFile(tmp_path / "c.parquet").metadata.num_row_groups == math.ceil(12 / 5)


def test_time_spellings(tmp_path):
    lines = ["timestamp,api,method",
             "2024-05-01T12:00:00Z,rpc,svc_call",
             "2024-05-01T14:00:01.5+02:00,rpc,svc_call",
             "1714564802.000000001,rpc,svc_call",
             "2024-05-01 12:00:03,rpc,svc_call"]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    import_trace(tmp_path / "t.csv", tmp_path / "o.parquet")
    got = [r["time_ns"] for r in read(tmp_path / "o.parquet")]
    assert got == [T0, T0 + 1_500_000_000, T0 + 2_000_000_001, T0 + 3_000_000_000]


def test_region_rule_and_override(tmp_path):
    assert region_from_host("rpc.eu-west-1.example-chain.io") == "eu-west-1"
    assert region_from_host("us-east.search.example.com") == "us-east"
    assert region_from_host("api.example.com") is None
    assert region_from_host("my-api.example.com") is None
    out = tmp_path / "o.parquet"
    import_trace(SAMPLES / "sample.har", out, region="ap-south-1")
    assert {r["region"] for r in read(out)} == {"ap-south-1"}


# -- invalid rows --------------------------------------------------------------------------

BAD_CSV = """timestamp,api,method,key,items,profiles
2024-05-01T12:00:00Z,rpc,svc_call,3f9a2c71d04e4b8e9a6c15f2b7d08e43,,
2024-13-01T12:00:00Z,rpc,svc_call,3f9a2c71d04e4b8e9a6c15f2b7d08e43,,
2024-05-01T12:00:02Z,rpc,svc_call,3f9a2c71d04e4b8e9a6c15f2b7d08e43,,

2024-05-01T12:00:03Z,graphql,svc_call,3f9a2c71d04e4b8e9a6c15f2b7d08e43,,
2024-05-01T12:00:04Z,rpc,svc_call
2024-05-01T12:00:05Z,rpc,svc_call,short,,
2024-05-01T12:00:06Z,search,POST /v1/size,3f9a2c71d04e4b8e9a6c15f2b7d08e43,3,"fast,deep"
2024-05-01T12:00:07Z,search,POST /v1/size,3f9a2c71d04e4b8e9a6c15f2b7d08e43,2,"fast,deep"
2024-05-01T12:00:08Z,rpc,,3f9a2c71d04e4b8e9a6c15f2b7d08e43,,
"""


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".parquet", ".tmp"))


def test_an_invalid_row_names_file_line_and_field_and_writes_nothing(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text(BAD_CSV)
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet")
    err = info.value
    assert (err.file, err.line, err.field) == (str(src), 3, "timestamp")
    assert leftovers(tmp_path) == []


def test_skip_counts_invalid_rows_by_reason(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_text(BAD_CSV)
    report = import_trace(src, tmp_path / "o.parquet", on_invalid="skip")
    assert report.skipped_by_reason == {"time": 1, "api": 1, "columns": 1, "key": 1,
                                        "profiles": 1, "method": 1}
    assert report.rows == 3 and len(read(tmp_path / "o.parquet")) == 3
    assert report.ignored == {"blank lines": 1}
    assert any(e.startswith(f"{src}:8: key:") for e in report.skipped_examples)
    assert "short" not in report.render()  # the bad key value is never echoed


@pytest.mark.parametrize(("fmt", "text", "line", "field"), [
    ("jsonl", '{"time_ns": 1714564800000000000, "api": "rpc", "method": "svc_call"}\n'
              '{"time_ns": 1714564800000000000, "api": "rpc", "method": "svc_call", '
              '"status": "busy"}\n', 2, "status"),
    ("jsonl", '\n{"time": 1714564800, "api": "rpc", "method": "svc_call"}\n[1]\n', 3, "line"),
    ("rpc-log", '2024-05-01T12:00:00Z {"jsonrpc":"2.0","id":1,"method":"svc_call",'
                '"params":[]}\n2024-05-01T12:00:01Z user=bob {"jsonrpc":"2.0","id":1,'
                '"method":"svc_call","params":[]}\n', 2, "line"),
    ("rpc-log", '# c\n2024-05-01T12:00:00Z {"jsonrpc":"2.0","id":[1],"method":"x",'
                '"params":[]}\n', 2, "id"),
    ("rpc-log", 'yesterday {"jsonrpc":"2.0","id":1,"method":"x","params":[]}\n', 1,
     "timestamp"),
    ("size-log", '2024-05-01T12:00:00Z status=200 {"state":{}}\n', 1, "state.hash"),
])
def test_invalid_rows_of_other_formats(tmp_path, fmt, text, line, field):
    src = tmp_path / "src.txt"
    src.write_text(text)
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet", fmt=fmt)
    assert (info.value.file, info.value.line, info.value.field) == (str(src), line, field)
    assert leftovers(tmp_path) == []
    report = import_trace(src, tmp_path / "o.parquet", fmt=fmt, on_invalid="skip",
                          allow_empty=lines_total(text) == 1)
    assert report.skipped == 1


def lines_total(text: str) -> int:
    return sum(1 for x in text.splitlines() if x.strip() and not x.startswith("#"))


def test_an_invalid_har_entry_is_located_by_its_index(tmp_path):
    har = json.loads((SAMPLES / "sample.har").read_text())
    entries = har["log"]["entries"]
    idx = next(i for i, e in enumerate(entries) if e["request"]["url"].split("?")[0]
               .endswith("/v1/size") and e["request"]["method"] == "POST")
    body = json.loads(entries[idx]["request"]["postData"]["text"])
    body["items"][0]["request"]["to"] = "0x1234"
    entries[idx]["request"]["postData"]["text"] = json.dumps(body)
    src = tmp_path / "x.har"
    src.write_text(json.dumps(har))
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet")
    assert (info.value.line, info.value.field) == (
        None, f"log.entries[{idx}].request.postData.text.items[0].request.to")
    assert f"x.har: log.entries[{idx}]." in info.value.render()
    assert "20-byte hex address" in info.value.message
    report = import_trace(src, tmp_path / "o.parquet", on_invalid="skip")
    assert report.skipped_by_reason == {"body": 1}


def test_a_typed_parquet_row_is_located_by_row_number(tmp_path):
    table = pa.table({"time_ns": pa.array([T0, T0 + 1, T0 + 2], pa.int64()),
                      "api": ["rpc", "rpc", "rpc"], "method": ["svc_call"] * 3,
                      "items": pa.array([None, -1, None], pa.int32())})
    pq.write_table(table, tmp_path / "src.parquet")
    with pytest.raises(CapsimError) as info:
        import_trace(tmp_path / "src.parquet", tmp_path / "o.parquet")
    assert (info.value.line, info.value.field) == (2, "items")


def test_a_quoted_newline_is_reported_with_exact_line_numbers(tmp_path):
    src = tmp_path / "q.csv"
    src.write_text('time_ns,api,method\n1714564800000000000,rpc,"svc\ncall"\n'
                   "1714564801000000000,rpc,svc_call\n1714564802000000000,rpc,\n")
    report = import_trace(src, tmp_path / "o.parquet", on_invalid="skip")
    lines = sorted(int(e.split(":")[1]) for e in report.skipped_examples)
    assert lines == [2, 3, 5] and report.rows == 1


def test_missing_columns_and_wrong_format_are_errors(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text("time_ns,method\n1714564800000000000,svc_call\n")
    with pytest.raises(CapsimError, match="api"):
        import_trace(src, tmp_path / "o.parquet")
    with pytest.raises(CapsimError, match="HAR"):
        import_trace(src, tmp_path / "o.parquet", fmt="har")
    with pytest.raises(CapsimError, match="Parquet"):
        import_trace(src, tmp_path / "o.parquet", fmt="parquet")
    with pytest.raises(CapsimError, match="folder"):
        import_trace(SAMPLES / "sample.csv", tmp_path / "nope" / "o.parquet")
    assert leftovers(tmp_path) == []


# -- keys ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sample.csv", "sample.jsonl", "sample.har", "sample-rpc.log",
                                  "sample-size.log"])
def test_no_sample_key_survives_in_the_output_bytes(tmp_path, name):
    keys = sample_keys()
    assert len(keys) == 3
    out = tmp_path / "o.parquet"
    report = import_trace(SAMPLES / name, out)
    assert report.distinct_keys == 3
    raw = out.read_bytes()
    rows = read(out)
    for key in keys:
        assert key.encode() not in raw
        assert not any(key in str(v) for r in rows for v in r.values())
    assert {r["key"] for r in rows} <= {pseudonym(k) for k in keys}
    assert all(k not in report.render() for k in keys)


def test_a_key_in_a_text_field_before_its_key_column_is_still_redacted(tmp_path):
    key = "Zk3VbQ9xR7tLmP2sWc8dHf4jNy6aEg1u"  # alphanumeric: no shape seen before it
    src = tmp_path / "a.csv"
    src.write_text("time_ns,api,method,key\n"
                   f"1714564800000000000,search,GET /v1/keys/{key}/usage,\n"
                   f"1714564801000000000,rpc,svc_call,{key}\n")
    import_trace(src, tmp_path / "o.parquet", chunk_rows=1)
    out = tmp_path / "o.parquet"
    assert key.encode() not in out.read_bytes()
    assert read(out)[0]["method"] == f"GET /v1/keys/{pseudonym(key)}/usage"


def test_pseudonyms_follow_the_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPSIM_PSEUDONYM_SECRET", "team-secret")
    import_trace(SAMPLES / "sample.csv", tmp_path / "o.parquet")
    keys = {r["key"] for r in read(tmp_path / "o.parquet")}
    assert keys == {pseudonym(k, b"team-secret") for k in sample_keys()}
    assert os.environ["CAPSIM_PSEUDONYM_SECRET"] == "team-secret"


def test_items_are_taken_from_profiles_and_pandas_style_integers_are_accepted(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text("time_ns,api,method,profiles,gas_used,status\n"
                   "1714564800000000000,search,POST /v1/size,\"fast,fast,deep\",1500.0,200.0\n"
                   "1714564801000000000,rpc,svc_call,,,-32005\n")
    rows = read(import_trace(src, tmp_path / "o.parquet").out)
    assert [(r["items"], r["gas_used"], r["status"]) for r in rows] == [
        (3, 1500, 200), (None, None, -32005)]


def test_har_handshakes_without_upgrade_header_and_batch_wide_errors(tmp_path):
    key = "5d07e9b3c2a14f8e96b0d1c7e4a3f215"
    env = [{"jsonrpc": "2.0", "id": i, "method": "svc_call", "params": []} for i in (1, 2)]

    def entry(method, url, body=None, status=200, reply=None, headers=()):
        req = {"method": method, "url": url, "headers": list(headers)}
        if body is not None:
            req["postData"] = {"text": json.dumps(body)}
        resp = {"status": status, "content": {} if reply is None else {"text": json.dumps(
            reply)}}
        return {"startedDateTime": "2024-05-01T14:00:00.000+02:00", "time": 5.0,
                "request": req, "response": resp}

    entries = [
        entry("GET", f"https://streams.us-east-1.x.io/new-blocks?key={key}", status=101),
        entry("GET", "https://search.x.io/v1/monitoring/unhealthy/ws", status=101,
              headers=[{"name": "X-Api-Key", "value": key}]),
        entry("POST", "https://rpc.x.io/", body=env, reply={
            "jsonrpc": "2.0", "id": None, "error": {"code": -32005, "message": "slow down"}}),
        entry("POST", "https://rpc.x.io/", body=env, reply=[
            {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "x"}},
            {"jsonrpc": "2.0", "id": 1, "result": "0x1"}]),
        entry("GET", "https://cdn.x.io/font.woff2"),
    ]
    src = tmp_path / "t.har"
    src.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    report = import_trace(src, tmp_path / "o.parquet")
    rows = read(tmp_path / "o.parquet")
    assert [(r["api"], r["method"], r["status"]) for r in rows] == [
        ("streams", "new-blocks", 101), ("search", "/v1/monitoring/unhealthy/ws", 101),
        ("rpc", "svc_call", -32005), ("rpc", "svc_call", -32005),
        ("rpc", "svc_call", 200), ("rpc", "svc_call", -32000)]
    assert rows[0]["region"] == "us-east-1" and rows[0]["key"] == pseudonym(key)
    # the font comes from a host neither learned from content nor mapped: counted by host
    assert rows[0]["time_ns"] == T0 and report.ignored == {
        "entries to hosts not recognised or mapped": 1}
    assert report.unmapped_hosts == {"cdn.x.io": 1}


def test_large_chunks_and_small_chunks_give_the_same_result(tmp_path):
    """Columns with few distinct values are checked per distinct value in large chunks
    and row by row in small ones; both must agree, bad rows included."""
    rng = np.random.default_rng(3)
    lines = ["time_ns,api,method,key,status,items,profiles,cu"]
    bad_lines = {}
    for i in range(6000):
        api, method = ("search", "POST /v1/size") if i % 4 == 0 else ("rpc", "svc_call")
        status = rng.choice(["200", "434", "-32005", ""])
        items, profiles = ("2", "fast,deep") if api == "search" else ("", "")
        cu = rng.choice(["20", "", "0.5"])
        if i in (4100, 5003):
            status, bad_lines[i + 2] = "busy", "status"
        if i == 4500:
            api, bad_lines[i + 2] = "soap", "api"
        if i == 5996:  # a sizing row whose profile count disagrees with items
            items, bad_lines[i + 2] = "3", "profiles"
        lines.append(f"{T0 + i * 10**8},{api},{method},3f9a2c71d04e4b8e9a6c15f2b7d08e43,"
                     f"{status},{items},\"{profiles}\",{cu}")
    src = tmp_path / "big.csv"
    src.write_text("\n".join(lines) + "\n")
    big = import_trace(src, tmp_path / "big.parquet", on_invalid="skip")
    small = import_trace(src, tmp_path / "small.parquet", on_invalid="skip", chunk_rows=700)
    assert big.skipped_by_reason == small.skipped_by_reason == dict(
        Counter(bad_lines.values()))
    assert read(tmp_path / "big.parquet") == read(tmp_path / "small.parquet")
    assert big.rows == 6000 - len(bad_lines)
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet")
    assert (info.value.line, info.value.field) == (4102, "status")
