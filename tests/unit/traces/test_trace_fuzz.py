"""Property tests of the importers: malformed input gives only CapsimError (with a
location), and generated keys never survive into the output file in any form."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim.core.errors import CapsimError
from sim.traces.importers import FORMATS, import_trace
from sim.traces.timeparse import _exact_time_array, parse_time_array, parse_time_text

FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
hex_keys = st.text(alphabet="0123456789abcdef", min_size=32, max_size=64)
T0 = 1_714_564_800_000_000_000


def run_import(data: bytes, fmt: str, on_invalid: str, suffix: str = ".src"):
    """Import ``data``; return the report, or the CapsimError raised. Nothing else."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"in{suffix}"
        src.write_bytes(data)
        out = Path(tmp) / "out.parquet"
        try:
            # empty results are allowed here: these tests are about row locations
            report = import_trace(src, out, fmt=fmt, on_invalid=on_invalid, chunk_rows=3,
                                  allow_empty=True)
        except CapsimError as err:
            assert err.file is not None or err.field is not None
            assert not out.exists()
            assert [p.name for p in Path(tmp).iterdir()] == [src.name]
            return err
        assert out.exists()
        return report


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(FORMATS), st.sampled_from(["error", "skip"]))
def test_arbitrary_bytes_give_only_capsim_errors(data, fmt, on_invalid):
    run_import(data, fmt, on_invalid)


cells = st.one_of(st.text(max_size=10), st.integers().map(str),
                  st.sampled_from(["rpc", "search", "streams", "svc_call", "POST /v1/size",
                                   "2024-05-01T12:00:00Z", "1714564800.5", "", "fast,deep",
                                   "1714564800000000000", "-32005", "3", "NaN", "1e999"]))


@FUZZ
@given(st.lists(st.lists(cells, min_size=0, max_size=8), max_size=8),
       st.permutations(["time_ns", "api", "method", "key", "items", "profiles", "status",
                        "cu"]))
def test_malformed_csv_rows_give_capsim_errors_with_locations(rows, header):
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    data = buf.getvalue().encode("utf-8", "surrogatepass")
    result = run_import(data, "csv", "error")
    if isinstance(result, CapsimError):
        assert result.line is not None and result.line >= 1
    skipped = run_import(data, "csv", "skip")
    assert not isinstance(skipped, CapsimError)
    # every physical line after the header is a row, an invalid row or a blank line
    physical = data.count(b"\n") - 1
    assert skipped.rows + skipped.skipped + sum(skipped.ignored.values()) == physical


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                         st.text(max_size=10), st.sampled_from(["rpc", "svc_call", T0]))


@FUZZ
@given(st.lists(st.one_of(
    st.dictionaries(st.sampled_from(["time_ns", "timestamp", "time", "api", "method",
                                     "api_key", "items", "profiles", "cu", "status", "x"]),
                    json_scalars, max_size=8),
    json_scalars, st.lists(json_scalars, max_size=2)), max_size=8))
def test_malformed_jsonl_rows_give_capsim_errors_with_locations(objs):
    data = "\n".join(json.dumps(o) for o in objs).encode()
    result = run_import(data, "jsonl", "error")
    if isinstance(result, CapsimError):
        assert result.line is not None and 1 <= result.line <= len(objs)
    skipped = run_import(data, "jsonl", "skip")
    assert skipped.rows + skipped.skipped == len(objs)


body = st.fixed_dictionaries({"jsonrpc": st.sampled_from(["2.0", "1.0"]),
                              "id": st.one_of(st.integers(), st.text(max_size=3)),
                              "method": st.sampled_from(["svc_call", "", 5]),
                              "params": st.one_of(st.lists(st.integers(), max_size=2),
                                                  st.none())})


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["2024-05-01T12:00:00Z", "1714564800", "bad", ""]),
                          st.lists(st.sampled_from(["key=0123456789abcdef", "region=eu",
                                                    "status=x", "cu=1", "foo=1", "key="]),
                                   max_size=3),
                          st.one_of(body, st.lists(body, max_size=2), st.text(max_size=5))),
                max_size=6))
def test_malformed_log_lines_give_capsim_errors_with_locations(lines):
    text = "\n".join(f"{ts} {' '.join(toks)} {json.dumps(b) if not isinstance(b, str) else b}"
                     for ts, toks, b in lines)
    result = run_import(text.encode(), "rpc-log", "error")
    if isinstance(result, CapsimError):
        assert result.line is not None and 1 <= result.line <= len(lines)


@FUZZ
@given(hex_keys, hex_keys, hex_keys)
def test_generated_keys_never_survive_in_har_output(k_header, k_query, k_bearer):
    assume(len({k_header, k_query, k_bearer}) == 3)
    entry = {"startedDateTime": "2024-05-01T12:00:00.000Z", "time": 10,
             "response": {"status": 200, "content": {"text": "{}"}}}
    entries = [
        {**entry, "request": {"method": "POST", "url": "https://rpc.eu-west-1.x.io/",
                              "headers": [{"name": "X-API-KEY", "value": k_header}],
                              "postData": {"text": json.dumps(
                                  {"jsonrpc": "2.0", "id": 1, "method": "svc_call",
                                   "params": [k_header]})}}},
        {**entry, "request": {"method": "GET",
                              "url": f"https://search.x.io/v1/{k_header}/usage?Api_Key="
                                     f"{k_query}", "headers": []}},
        {**entry, "request": {"method": "GET", "url": "wss://streams.x.io/new-blocks",
                              "headers": [{"name": "authorization",
                                           "value": f"Bearer {k_bearer}"},
                                          {"name": "upgrade", "value": "websocket"}]}},
    ]
    data = json.dumps({"log": {"entries": entries}}).encode()
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / f"{k_query}.har", Path(tmp) / "o.parquet"
        src.write_bytes(data)
        import_trace(src, out)
        raw = out.read_bytes()
        values = " ".join(str(v) for r in pq.read_table(out).to_pylist() for v in r.values())
        meta = str(pq.read_metadata(out).metadata)
    for key in (k_header, k_query, k_bearer):
        assert key.encode() not in raw and key not in values and key not in meta


@FUZZ
@given(st.lists(hex_keys, min_size=1, max_size=4, unique=True), st.integers(1, 4))
def test_generated_keys_never_survive_in_csv_and_log_output(keys, chunk_rows):
    rows = ["time_ns,api,method,X-Api-Key,region"]
    lines = []
    for i, key in enumerate(keys):
        rows.append(f"{T0 + i},search,GET /v1/k/{key}?key={key},{key},eu-{key[:3]}")
        lines.append(f"{T0 // 10**9 + i} key={key} "
                     + json.dumps({"jsonrpc": "2.0", "id": i, "method": "svc_call",
                                   "params": [key]}))
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, fmt in (("a.csv", "\n".join(rows), "csv"),
                                ("a.log", "\n".join(lines), "rpc-log")):
            src, out = Path(tmp) / name, Path(tmp) / f"{name}.parquet"
            src.write_text(text)
            import_trace(src, out, fmt=fmt, chunk_rows=chunk_rows)
            raw = out.read_bytes()
            values = str(pq.read_table(out).to_pylist())
            for key in keys:
                assert key.encode() not in raw and key not in values


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(946_684_800, 7_258_118_399), st.integers(0, 253_402_300_799)),
       st.integers(0, 999_999_999),
       st.sampled_from(["Z", "+02:00", "-0530", "", "+00"]), st.booleans())
def test_scalar_and_vectorised_time_parsers_agree(secs, nanos, zone, epoch):
    from datetime import UTC, datetime, timedelta

    if epoch:
        text = f"{secs}.{nanos:09d}"
        expected = secs * 10**9 + nanos
    else:
        offset = {"Z": 0, "+02:00": 7200, "-0530": -19800, "": 0, "+00": 0}[zone]
        assume(86400 < secs < 253_402_300_799 - 86400)
        local = datetime.fromtimestamp(secs, UTC) + timedelta(seconds=offset)
        text = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}" + zone
        expected = secs * 10**9 + nanos
    import pyarrow as pa

    ns, ok = parse_time_array(pa.array([text]))
    ns_exact, ok_exact = _exact_time_array(pa.array([text, "2024-02-30T00:00:00Z"]))
    assert ok_exact[0] == ok[0] and ns_exact[0] == ns[0] and not ok_exact[1]
    scalar = parse_time_text(text)
    in_range = 946_684_800 * 10**9 <= expected < 7_258_118_400 * 10**9
    assert scalar == (expected if in_range else None)
    assert bool(ok[0]) == in_range and (not in_range or int(ns[0]) == expected)


def test_out_of_range_and_malformed_times_are_rejected():
    import pyarrow as pa

    bad = ["2024-02-30T00:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:00:60Z",
           "1714564800000", "-1714564800", "1999-12-31T23:59:59Z", "2024-05-01T12:00:00+25:00",
           "1.7e9", "", "today"]
    ns, ok = parse_time_array(pa.array(bad))
    assert not ok.any()
    assert all(parse_time_text(b) is None for b in bad)
    assert np.all(ns == 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_empty_file_is_handled_in_every_format(fmt):
    result = run_import(b"", fmt, "error")
    assert isinstance(result, CapsimError) or result.rows == 0


time_texts = st.one_of(
    st.builds(lambda s, f, z, sep: (
        __import__("datetime").datetime.fromtimestamp(s, __import__("datetime").UTC)
        .strftime(f"%Y-%m-%d{sep}%H:%M:%S") + f + z),
        st.integers(946_684_800, 7_258_118_399), st.sampled_from(["", ".5", ".123456789",
                                                                   ".1234567891", ",25"]),
        st.sampled_from(["", "Z", "z", "+02:00", "-0130", "+24:00"]),
        st.sampled_from(["T", " ", "t"])),
    st.builds(lambda s, f: f"{s}{f}", st.integers(0, 99_999_999_999),
              st.sampled_from(["", ".", ".25", ".000000001", ".0000000019"])),
    st.sampled_from(["2024-02-30T00:00:00Z", "2023-02-29T12:00:00Z", "2024-05-01T12Z",
                     "2024-05-01", " 1714564800 ", "+1714564800", "1e9", ""]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(time_texts, min_size=1, max_size=12))
def test_vectorised_parser_equals_the_scalar_one_on_mixed_chunks(texts):
    import pyarrow as pa

    ns, ok = parse_time_array(pa.array(texts))
    for text, got_ns, got_ok in zip(texts, ns, ok, strict=True):
        want = parse_time_text(text)
        assert bool(got_ok) == (want is not None), text
        if want is not None:
            assert int(got_ns) == want, text


@pytest.mark.parametrize("status", ["+0", "+200", "+434"])
def test_status_with_an_explicit_plus_sign_is_an_integer(status):
    # Found by the CSV fuzz test above: Arrow's int64 cast raised ArrowInvalid on "+0".
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["time_ns", "api", "method", "key", "status"])
    writer.writerow([str(T0), "rpc", "svc_call", "key-abcdefgh-1234", status])
    report = run_import(buf.getvalue().encode(), "csv", "error")
    assert not isinstance(report, CapsimError) and report.rows == 1
