"""The byte-level fast paths of tabular validation give what the exact paths give.

``tabular._gated`` reads the values a cheap byte check certainly accepts (plain digits,
digits and dots, hex) with one cast and sends the rest through the regex path;
``timeparse._fixed_layout_times`` reads times spelled like the first one from their
bytes. These tests run both ways on the same input and compare values, masks and the
problems recorded, and check that a bad value deep in a later block of a big file is
still reported at its own line and field (the checks now run on blocks of rows at once).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.core.errors import CapsimError
from sim.traces import tabular, timeparse
from sim.traces.importers import import_trace
from sim.traces.problems import Problems

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

digit = st.sampled_from("0123456789")


def _iso(draw_digits: list[str], tail: str, sep: str) -> str:
    d = draw_digits
    return (f"{''.join(d[0:4])}-{''.join(d[4:6])}-{''.join(d[6:8])}{sep}"
            f"{''.join(d[8:10])}:{''.join(d[10:12])}:{''.join(d[12:14])}{tail}")


same_layout = st.tuples(
    st.sampled_from(["", ".5", ".123Z", ".1234567891", "Z", "+05:30", "-0530", "+23", "z",
                     ",25Z", "+24:00", " "]),
    st.sampled_from(["T", " ", "t"]),
    st.lists(st.one_of(st.lists(digit, min_size=14, max_size=14),
                       st.just(list("20240501120000")), st.just(list("20240230120000")),
                       st.just(list("21991231235959")), st.just(list("19991231235959"))),
             min_size=1, max_size=12),
    st.lists(st.sampled_from([None, "", "1714564800.25", "2024-05-01T12:00Z", "x",
                              " 2024-05-01T12:00:00Z"]), max_size=3),
)


@SETTINGS
@given(same_layout)
def test_times_in_one_layout_read_as_the_exact_parser_reads_them(case):
    """Fails on a layout read that differs from the regex path (a month 13, a Feb 30, a
    zone +24:00, more than nine fraction digits, 11-digit epoch seconds in int32)."""
    tail, sep, rows, others = case
    texts = [_iso(d, tail, sep) for d in rows] + others
    arr = pa.array(texts, pa.string())
    ns, ok = timeparse.parse_time_array(arr)
    ns_exact, ok_exact = timeparse._general_time_array(arr)
    assert ok.tolist() == ok_exact.tolist()
    assert ns.tolist() == ns_exact.tolist()
    for text, got_ns, got_ok in zip(texts, ns, ok, strict=True):
        want = None if text is None else timeparse.parse_time_text(text)
        assert bool(got_ok) == (want is not None)
        assert not got_ok or int(got_ns) == want


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 99_999_999_999), st.text("0123456789", max_size=12),
                          st.booleans()), min_size=1, max_size=10))
def test_epoch_seconds_in_one_layout(rows):
    """Fails when 10- and 11-digit seconds overflow a 32-bit field (2**31 = 2038)."""
    texts = [f"{i}.{f}" if dot else str(i) for i, f, dot in rows]
    arr = pa.array(texts)
    ns, ok = timeparse.parse_time_array(arr)
    ns_exact, ok_exact = timeparse._general_time_array(arr)
    assert ok.tolist() == ok_exact.tolist() and ns.tolist() == ns_exact.tolist()


cells = st.one_of(st.none(), st.sampled_from(
    ["", " ", "0", "7", " 42 ", "+5", "-3", "3.0", "007", "1.5", ".5", "5.", "1.2.3", ".",
     "1e3", "-32005", "200", "9" * 18, "9" * 19, "8" * 19, "99999999999999999999", "nan",
     "inf", "0x1F", "１２", "\u00a012", "abcdef0123456789", "ABCDEF0123456789AB",
     "abcdef012345678", "g" * 16, "a" * 65]), st.text(max_size=6))
ROLES = ["items", "gas_used", "status", "cu", "latency_ms", "retry_after_s", "body_hash"]


def _normalize(cols: dict[str, list], on_invalid: str):
    n = len(next(iter(cols.values())))
    raw = {"time_ns": pa.array([str(1_714_564_800_000_000_000 + i) for i in range(n)]),
           "api": pa.array(["rpc"] * n), "method": pa.array(["eth_call"] * n),
           **{role: pa.array(v, pa.string()) for role, v in cols.items()}}
    labels = {role: role for role in raw}
    problems = Problems("f.csv", on_invalid)
    lines = np.arange(2, n + 2, dtype=np.int64)
    try:
        out = tabular.normalize(raw, labels, lines, problems)
        problems.settle()
    except CapsimError as err:
        return ("error", err.render())
    if out is None:
        return (None, dict(problems.counts), problems.examples)
    flat = {k: (v.to_pylist() if isinstance(v, pa.Array) else
                None if v is None else np.asarray(v).tolist()) for k, v in out.items()}
    return (flat, dict(problems.counts), problems.examples)


@pytest.mark.parametrize("role", ROLES)
@SETTINGS
@given(st.lists(cells, min_size=1, max_size=8), st.sampled_from(["error", "skip"]))
def test_one_column_with_and_without_the_fast_paths(monkeypatch, role, values, on_invalid):
    """Fails when a gate lets through a value the regex refuses ("0x1F", "1.2.3", a
    19-digit integer, full-width digits, a 15-digit hash) or reads one differently."""
    fast = _normalize({role: values}, on_invalid)
    with monkeypatch.context() as m:
        m.setattr(tabular, "_gated", lambda values, gate, fast, exact: exact(values))
        exact = _normalize({role: values}, on_invalid)
    assert fast == exact


@SETTINGS
@given(st.lists(st.tuples(*[cells] * len(ROLES)), min_size=1, max_size=8),
       st.sampled_from(["error", "skip"]))
def test_mixed_rows_with_and_without_the_fast_paths(monkeypatch, rows, on_invalid):
    """As above, every column mixing gated and exact rows."""
    cols = {role: [r[i] for r in rows] for i, role in enumerate(ROLES)}
    fast = _normalize(cols, on_invalid)
    with monkeypatch.context() as m:
        m.setattr(tabular, "_gated", lambda values, gate, fast, exact: exact(values))
        m.setattr(timeparse, "_fixed_layout_times", lambda values: None)
        exact = _normalize(cols, on_invalid)
    assert fast == exact


BAD = {"gas_used": "1.2.3", "status": "0x1F", "latency_ms": "1e999", "items": "-1",
       "body_hash": "abcdef012345678g", "timestamp": "2024-02-30T12:00:00.000Z",
       "cu": "."}


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("field", sorted(BAD))
def test_a_bad_value_in_a_later_block_names_its_line(tmp_path, fmt, field):
    """4,000 clean rows (several read blocks of 64 KiB or more, chunks of 512 rows) with one bad
    value at line 3,003, in a later block and chunk:
    the error names that line and the column. Fails if a vectorised check loses the row's
    line (reporting the block's first line, or none)."""
    names = ["timestamp", "api", "method", "key", "items", "gas_used", "status", "cu",
             "latency_ms", "body_hash"]
    bad_line = 3_003
    src = tmp_path / f"t.{fmt}"
    with open(src, "w") as fh:
        if fmt == "csv":
            fh.write(",".join(names) + "\n")
        for line in range(2 if fmt == "csv" else 1, 4_001):
            ms = line % 1000
            row = {"timestamp": f"2024-05-01T12:{line // 1000 % 60:02d}:00.{ms:03d}Z",
                   "api": "rpc", "method": "eth_call", "key": "0123456789abcdef",
                   "items": "", "gas_used": str(line * 7), "status": "200",
                   "cu": "20", "latency_ms": f"{line % 97}.5",
                   "body_hash": f"{line:016x}"}
            if line == bad_line:
                row[field] = BAD[field]
            if fmt == "csv":
                fh.write(",".join(row[n] for n in names) + "\n")
            else:
                obj = {n: row[n] for n in names if row[n] != ""}
                for n in ("gas_used", "status", "cu", "latency_ms", "items"):
                    if n in obj and not (line == bad_line and n == field):
                        obj[n] = json.loads(obj[n])
                fh.write(json.dumps(obj) + "\n")
    with pytest.raises(CapsimError) as err:
        import_trace(src, tmp_path / "o.parquet", chunk_rows=512)
    assert err.value.line == bad_line
    assert err.value.field == field
    report = import_trace(src, tmp_path / "o.parquet", chunk_rows=512, on_invalid="skip")
    rows = 3_999 if fmt == "csv" else 4_000
    assert report.skipped == 1 and report.rows == rows - 1
    assert str(bad_line) in report.skipped_examples[0]


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.sampled_from(
    ["a", "1", " ", "\t", "\x1c", "\x7f", "\u00a0", "\u2003", "\u3000", "é", ",", "\r"]),
    max_size=5)), max_size=10), st.booleans())
def test_text_is_trimmed_text_with_empty_as_null(values, as_binary):
    """Fails when skipping the trim (no value with a space-like first or last byte) or
    viewing ASCII bytes as text changes a value: the column must equal Arrow's trim of
    the decoded text with empty values as null."""
    arr = pa.array([None if v is None else v.encode() for v in values], pa.binary()) \
        if as_binary else pa.array(values, pa.string())
    got = tabular._Chunk({"method": arr}, len(values)).text("method")
    trimmed = [None if v is None else
               pa.compute.utf8_trim_whitespace(pa.array([v])).to_pylist()[0] for v in values]
    assert got.type == pa.string()
    assert got.to_pylist() == [t or None for t in trimmed]


@SETTINGS
@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "a?x", "a?y", "c?", "B"])),
                max_size=12))
def test_mapped_dictionaries_are_those_of_encoding_the_mapped_column(values):
    """Fails when a map that joins values ("a?x" and "a?y" -> "a", "b" and "B" -> "b")
    leaves a duplicate or a misplaced entry in the dictionary: the Parquet file stores
    the dictionary, so it must be the one encoding the mapped strings gives."""
    from sim.traces.canonical import _encode_mapped, _same_or_mapped

    def fn(v):
        return v.split("?", 1)[0].lower() or v

    arr = pa.array(values, pa.string())
    want = pa.compute.dictionary_encode(
        pa.array([None if v is None else fn(v) for v in values], pa.string()))
    got = _encode_mapped(arr, fn)
    assert got.equals(want)
    assert _same_or_mapped(arr, fn).to_pylist() == [None if v is None else fn(v)
                                                    for v in values]
