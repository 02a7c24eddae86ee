"""JSONL read by Arrow's JSON reader, block by block, gives what reading it line by line
with ``json.loads`` gives: the same rows, the same invalid lines (reason, line, field)
and the same report, whatever the values' JSON types, the blocks and the chunks."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.core.errors import CapsimError
from sim.traces import formats_tabular, importers
from sim.traces.importers import import_trace

T0 = 1_714_564_800_000_000_000
KEY = "3f9a2c71d04e4b8e9a6c15f2b7d08e43"
NAMES = ["time_ns", "timestamp", "time", "api", "method", "api_key", "key", "items",
         "profiles", "cu", "status", "latency_ms", "gas_used", "region", "x", "Cu"]
values = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.integers(), st.floats(),
    st.integers(-(2**70), 2**70), st.sampled_from([0.5, 3.0, -0.0, 1e16, 2.0**53 + 1, 1e20]),
    st.sampled_from([T0, T0 + 1, T0 / 1e9, 1714564800, 1714564800.25, "2024-05-01T12:00:00Z",
                     "rpc", "search", "svc_call", "POST /v1/size", KEY, "fast", "fast,fast",
                     "", " ", "20", "x\u00e9"]),
    st.text(max_size=6), st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=1))


good = st.fixed_dictionaries({"time_ns": st.integers(T0, T0 + 10**12),
                              "api": st.sampled_from(["rpc", "search"]),
                              "method": st.sampled_from(["svc_call", "POST /v1/size"]),
                              "key": st.just(KEY)},
                             optional={"cu": st.one_of(st.integers(0, 50), st.floats(0, 50)),
                                       "items": st.integers(0, 3),
                                       "status": st.sampled_from([200, 434, -32005])})
messy = st.dictionaries(st.sampled_from(NAMES), values, max_size=8)
# a valid row with one or two odd values: valid or not depending on the value alone
odd = st.builds(lambda g, m: {**g, **m}, good,
                st.dictionaries(st.sampled_from(NAMES), values, min_size=1, max_size=2))
lines = st.lists(st.one_of(good.map(json.dumps), odd.map(json.dumps), odd.map(json.dumps),
                           messy.map(json.dumps),
                           st.sampled_from(["", "  ", "\t", "null", "[1]", "{", "7",
                                            '{"a": 1}{"b": 2}', '{"cu": NaN, "api": "rpc"}',
                                            '{"time": 1e400}', '{"cu": 1, "cu": 2}'])),
                 max_size=40)


def _import(data: bytes, on_invalid: str, fast: bool, chunk_rows: int, block: int):
    reader = functools.partial(formats_tabular.read_jsonl, fast=fast)
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setattr(importers, "read_jsonl", reader)
        mp.setattr(formats_tabular, "JSONL_BLOCK", block)  # many blocks, lines cut across
        src, out = Path(tmp) / "t.jsonl", Path(tmp) / "t.parquet"
        src.write_bytes(data)
        try:
            report = import_trace(src, out, on_invalid=on_invalid, chunk_rows=chunk_rows,
                                  allow_empty=True)
        except CapsimError as err:
            return ("error", err.render().replace(tmp, "<tmp>"))
        table = pq.read_table(out)
        meta = table.schema.metadata
        return ("ok", table.replace_schema_metadata(None), meta.get(b"capsim.trace_version"),
                report.rows, report.skipped_by_reason,
                tuple(e.replace(tmp, "<tmp>") for e in report.skipped_examples),
                report.ignored, report.ignored_columns)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines, st.sampled_from(["error", "skip"]), st.sampled_from([1, 3, 7, 500]),
       st.sampled_from(["\n", "\r\n"]), st.sampled_from([97, 700, 1 << 16]))
def test_arrow_blocks_read_as_json_loads_line_by_line(body, on_invalid, chunk_rows, eol, block):
    data = eol.join(body).encode("utf-8", "surrogatepass") + eol.encode()
    fast = _import(data, on_invalid, True, chunk_rows, block)
    slow = _import(data, on_invalid, False, chunk_rows, block)
    assert fast[0] == slow[0]
    if fast[0] == "error":
        assert fast == slow
        return
    assert fast[1].equals(slow[1])
    assert fast[2:] == slow[2:]


@pytest.mark.parametrize(("chunk_rows", "block"), [(1, 97), (3, 97), (500, 1 << 16)])
def test_an_integer_beyond_two_to_the_53_in_a_number_column(chunk_rows, block):
    """Found by the property above: a number column holding an integer beyond 2**53 beside
    floats (or alone) raised ArrowInvalid from a safe int -> double cast; line by line it
    is the nearest double."""
    body = [json.dumps({"time_ns": T0, "api": "rpc", "method": "svc_call", "key": KEY}),
            json.dumps({"time_ns": T0, "api": "rpc", "method": "svc_call", "key": KEY,
                        "cu": 0.0}),
            json.dumps({"time_ns": None, "api": "rpc", "method": "svc_call", "key": KEY,
                        "cu": 1714564800000000000})]
    data = ("\n".join(body) + "\n").encode()
    for on_invalid in ("error", "skip"):
        fast = _import(data, on_invalid, True, chunk_rows, block)
        slow = _import(data, on_invalid, False, chunk_rows, block)
        assert fast[0] == slow[0]
        assert fast == slow if fast[0] == "error" else fast[1].equals(slow[1])


def test_a_clean_file_takes_the_arrow_path(tmp_path, monkeypatch):
    """Not every block falls back: a clean file never reads a line with json.loads."""
    rows = [{"time_ns": T0 + i, "api": "rpc", "method": "svc_call", "key": KEY,
             "cu": 20.0 if i % 2 else 10, "status": 200, "latency_ms": 1.5} for i in range(500)]
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    def refuse(*a, **k):
        raise AssertionError("read line by line")

    monkeypatch.setattr(formats_tabular, "_jsonl_slow", refuse)
    report = import_trace(src, tmp_path / "t.parquet", chunk_rows=128)
    assert report.rows == 500
    assert pq.read_table(tmp_path / "t.parquet").column("cu").to_pylist()[:2] == [10.0, 20.0]


def _base(i: int, **extra) -> str:
    row = {"time_ns": T0 + i, "api": "rpc", "method": "svc_call", "key": KEY}
    row.update(extra)
    return json.dumps(row)


CASES = {
    # a float where an integer is expected: read as the float's text ("1e+16" is refused)
    "float gas": [_base(0, gas_used=1e16), _base(1, gas_used=3.0), _base(2, gas_used=2.5),
                  _base(3, gas_used=7)],
    # an integer too large for a float next to a float: Arrow rounds it, so line by line
    "promoted": [_base(0, gas_used=2**53 + 1), _base(1, gas_used=1.5)],
    "time floats": [json.dumps({"time": 1714564800.25, "api": "rpc", "method": "m"}),
                    json.dumps({"time": 1714564800, "api": "rpc", "method": "m"}),
                    json.dumps({"time": 1714564800123, "api": "rpc", "method": "m"})],
    "time_ns float": [json.dumps({"time_ns": 1.7145648e18, "api": "rpc", "method": "m"}),
                      _base(1)],
    "time_ns huge": [json.dumps({"time_ns": 9_100_000_000_000_000_000, "api": "rpc",
                                 "method": "m"}), _base(1)],
    "numbers": [_base(0, cu=3), _base(1, cu=2.5), _base(2, cu=-1), _base(3, cu="20"),
                _base(4, latency_ms=True), _base(5, cu=1e300)],
    "types": [_base(0, items="3"), _base(1, items=3), _base(2, items=True),
              _base(3, items=[1]), _base(4, items={"a": 1}), _base(5, api=1),
              _base(6, region=2), _base(7, status=-32005.0)],
    "aliases": [_base(0, api_key=KEY), json.dumps({"time": 1714564800, "time_ns": T0,
                                                   "api": "rpc", "method": "m"}),
                json.dumps({"TIME_NS": T0, "api": "rpc", "method": "m", "Key": KEY})],
    "time both": [_base(0), json.dumps({"timestamp": "2024-05-01T12:00:00Z", "api": "rpc",
                                        "method": "m"}),
                  json.dumps({"time_ns": None, "timestamp": "2024-05-01T12:00:00Z",
                              "api": "rpc", "method": "m"})],
    "columns": [json.dumps({**{f"c{i}": i for i in range(60)}, "time_ns": T0, "api": "rpc",
                            "method": "m"}), _base(1, zz=1, c0=2)],
    "blank and nan": [_base(0), "", "  \t", _base(3, cu=float("nan")), _base(4)],
    # an invalid row (line 4) before a line that is not an object (line 6): line 4 first
    "order": [_base(0), _base(1), _base(2), _base(3, items=-1), _base(4), "null", _base(6)],
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("on_invalid", ["error", "skip"])
@pytest.mark.parametrize("chunk_rows", [1, 500])
def test_each_conversion_reads_as_line_by_line(name, on_invalid, chunk_rows):
    data = ("\n".join(CASES[name]) + "\n").encode()
    fast = _import(data, on_invalid, True, chunk_rows, 1 << 16)
    slow = _import(data, on_invalid, False, chunk_rows, 1 << 16)
    assert fast[0] == slow[0]
    if fast[0] == "error":
        assert fast == slow
    else:
        assert fast[1].equals(slow[1])
        assert fast[2:] == slow[2:]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("chunk_rows", [1, 2, 500])
def test_the_first_invalid_line_is_the_one_reported(fast, chunk_rows):
    """Line 4 is invalid (a negative item count), line 6 is not an object: line 4 is the
    error, though line 6's block was read before line 4's row was validated."""
    data = ("\n".join(CASES["order"]) + "\n").encode()
    result = _import(data, "error", fast, chunk_rows, 1 << 16)
    assert result[0] == "error" and result[1].startswith("<tmp>/t.jsonl:4: items:")
    skipped = _import(data, "skip", fast, chunk_rows, 1 << 16)
    assert skipped[3] == 5 and skipped[4] == {"items": 1, "json": 1}
