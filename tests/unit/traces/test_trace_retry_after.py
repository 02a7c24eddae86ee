"""The nullable ``retry_after_s`` column, from every source format.

Expected values are the numbers written into the sources by hand.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sim.core.errors import CapsimError
from sim.traces.importers import import_trace

KEY = "3f9a2c71d04e4b8e9a6c15f2b7d08e43"


def column(path) -> list:
    return pq.read_table(path).column("retry_after_s").to_pylist()


@pytest.mark.parametrize("name", ["retry_after_s", "retry_after", "Retry_After"])
def test_csv_column_and_its_alias(tmp_path, name):
    (tmp_path / "a.csv").write_text(
        f"timestamp,api,method,status,{name}\n"
        "2024-05-01T12:00:00Z,search,POST /v1/size,434,7\n"
        "2024-05-01T12:00:01Z,search,POST /v1/size,200,\n"
        "2024-05-01T12:00:02Z,rpc,svc_call,-32005,2.5\n")
    import_trace(tmp_path / "a.csv", tmp_path / "o.parquet")
    assert column(tmp_path / "o.parquet") == [7.0, None, 2.5]


def test_jsonl_and_parquet(tmp_path):
    rows = [{"time_ns": 1_714_564_800_000_000_000, "api": "rpc", "method": "svc_call",
             "status": 434, "retry_after": 11},
            {"time_ns": 1_714_564_801_000_000_000, "api": "rpc", "method": "svc_call",
             "status": 200}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_trace(tmp_path / "a.jsonl", tmp_path / "j.parquet")
    assert column(tmp_path / "j.parquet") == [11.0, None]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "src.parquet")
    import_trace(tmp_path / "src.parquet", tmp_path / "p.parquet", fmt="parquet")
    assert column(tmp_path / "p.parquet") == [11.0, None]


def test_a_negative_retry_after_is_an_invalid_row(tmp_path):
    (tmp_path / "a.csv").write_text("timestamp,api,method,retry_after_s\n"
                                    "2024-05-01T12:00:00Z,rpc,svc_call,-3\n")
    with pytest.raises(CapsimError) as err:
        import_trace(tmp_path / "a.csv", tmp_path / "o.parquet")
    assert "a.csv:2: retry_after_s:" in err.value.render()


def test_raw_log_token(tmp_path):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "svc_call", "params": []})
    (tmp_path / "a.log").write_text(
        f"2024-05-01T12:00:00Z key={KEY} status=-32005 retry_after=4 {body}\n"
        f"2024-05-01T12:00:01Z key={KEY} status=200 {body}\n")
    import_trace(tmp_path / "a.log", tmp_path / "o.parquet", fmt="rpc-log")
    assert column(tmp_path / "o.parquet") == [4.0, None]


def _entry(started: str, status: int, headers: list[dict]) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "svc_call", "params": []}
    return {"startedDateTime": started, "time": 80,
            "request": {"method": "POST", "url": "https://rpc.us-east-1.example-chain.io/",
                        "headers": [{"name": "X-Api-Key", "value": KEY}],
                        "postData": {"mimeType": "application/json",
                                     "text": json.dumps(body)}},
            "response": {"status": status, "headers": headers, "content": {}}}


def test_har_header_seconds_and_http_date(tmp_path):
    entries = [
        _entry("2024-05-01T12:00:00.000Z", 434, [{"name": "Retry-After", "value": "9"}]),
        _entry("2024-05-01T12:00:01.000Z", 434,
               [{"name": "retry-after", "value": "Wed, 01 May 2024 12:00:12 GMT"}]),
        _entry("2024-05-01T12:00:02.000Z", 200, []),
    ]
    (tmp_path / "a.har").write_text(json.dumps({"log": {"entries": entries}}))
    import_trace(tmp_path / "a.har", tmp_path / "o.parquet")
    assert column(tmp_path / "o.parquet") == [9.0, 11.0, None]
