"""Streamed records: chunked recorder, Parquet spool, per-minute aggregates, --records."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import sim
from sim.model import recorder as rc
from sim.model.aggregates import MinuteOutcomes, minute_of

SHORT = ["duration=120"]


def _rows(n: int):
    """n attempt rows whose values are known from their index alone."""
    for i in range(n):
        yield (i, 1 + i % 3, i % 2, i % 5, 0, 1, 0.5 * i, 0.5 * i + 0.25, i % 4,
               float(i), float(i) / 2, np.nan if i % 2 else 3.0, bool(i % 2), 0.001 * i)


def _record(rec: rc.Recorder, n: int) -> None:
    for row in _rows(n):
        rec.attempt(*row)
    rec.close()


def _expected(n: int) -> dict[str, np.ndarray]:
    cols = list(zip(*_rows(n), strict=True)) or [()] * len(rc.ATTEMPT_COLUMNS)
    return {name: np.array(c, dtype=dt) for (name, dt), c in
            zip(rc.ATTEMPT_COLUMNS, cols, strict=True)}


@pytest.mark.parametrize("n", [0, 1, 3, 7])
def test_memory_sink_keeps_every_row_in_chunks_of_chunk_rows(n):
    seen = []
    rec = rc.Recorder(on_chunk=lambda c: seen.append(len(c["outcome"])), chunk_rows=3)
    _record(rec, n)
    assert seen == [3] * (n // 3) + ([n % 3] if n % 3 else [])
    got = rec.attempt_sink.read()
    for name, want in _expected(n).items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
        assert got[name].dtype == want.dtype, name


def test_parquet_sink_writes_one_row_group_per_chunk_and_reads_back(tmp_path):
    sink = rc.ParquetSink(rc.ATTEMPT_COLUMNS, tmp_path / "a.parquet")
    rec = rc.Recorder(attempts=sink, chunk_rows=4)
    _record(rec, 10)
    assert pq.ParquetFile(tmp_path / "a.parquet").metadata.num_row_groups == 3  # 4 + 4 + 2
    got = sink.read()
    for name, want in _expected(10).items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
    chunks = list(sink.chunks(["request_id"]))
    assert [c["request_id"].tolist() for c in chunks] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_buffers_bound_once_keep_working_across_flushes():
    # The engine binds the row buffers once, packs into them and calls flush() when a
    # chunk is full: the buffers are emptied in place, so rows after a flush land in the
    # next chunk.
    seen = []
    rec = rc.Recorder(on_chunk=lambda c: seen.append(c["request_id"].tolist()), chunk_rows=3)
    buf, pack = rec.attempt_buf, rc.ATTEMPT_ROW.pack
    for row in _rows(7):
        buf += pack(*row)
        if len(buf) >= rec.attempt_chunk_bytes:
            rec.flush()
    rec.close()
    assert seen == [[0, 1, 2], [3, 4, 5], [6]]
    got = rec.attempt_sink.read()
    for name, want in _expected(7).items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
        assert got[name].dtype == want.dtype, name


def test_flush_hands_on_only_a_full_table():
    rec = rc.Recorder(chunk_rows=2)
    for row in _rows(2):
        rec.attempt_buf += rc.ATTEMPT_ROW.pack(*row)
    rec.request_buf += rc.REQUEST_ROW.pack(0, 1, 2, 0, 0.5, 0.75, 0, 1)  # one of two rows
    rec.flush()
    assert len(rec.attempt_buf) == 0 and len(rec.request_buf) == rc.REQUEST_ROW.size
    assert len(rec.attempt_sink.read()["request_id"]) == 2
    assert len(rec.request_sink.read()["request_id"]) == 0


def test_a_flush_survives_a_profiler_keeping_the_converting_frame():
    # Dask's workers sample their threads' stacks: a frame kept past its return keeps
    # its locals. A view of the row buffer among them made the next in-place clear
    # fail (BufferError) in a sweep on a LocalCluster.
    kept = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "columns_of":
            kept.append(frame)

    rec = rc.Recorder(chunk_rows=2)
    sys.settrace(tracer)
    try:
        for row in _rows(5):
            rec.attempt(*row)
        rec.close()
    finally:
        sys.settrace(None)
    assert len(kept) == 3  # 2 + 2 + 1 rows: every conversion was watched
    got = rec.attempt_sink.read()
    np.testing.assert_array_equal(got["request_id"], np.arange(5))


@pytest.mark.parametrize("fmt", [rc.ATTEMPT_ROW, rc.REQUEST_ROW])
def test_packed_rows_come_back_exact_at_the_edges_of_their_types(fmt):
    # Each column's extremes (and NaN, signed zero, subnormals) survive the packing.
    edges = {np.int64: [-(2 ** 63), 2 ** 63 - 1, 0], np.int16: [-32768, 32767, 0],
             np.int8: [-128, 127, 0], np.bool_: [True, False, True],
             np.float64: [np.nan, -0.0, 5e-324]}
    rows = list(zip(*(edges[dt] for _, dt in fmt.columns), strict=True))
    got = fmt.columns_of(b"".join(fmt.pack(*row) for row in rows))
    for i, (name, dt) in enumerate(fmt.columns):
        want = np.array([row[i] for row in rows], dtype=dt)
        assert got[name].dtype == np.dtype(dt) and got[name].flags.c_contiguous, name
        assert got[name].tobytes() == want.tobytes(), name  # bit for bit (NaN, -0.0)


def test_minute_of_puts_edges_where_histogram_does():
    t = np.array([0.0, 59.999999, 60.0, 119.5, 120.0, 3599.9999999999995])
    np.testing.assert_array_equal(minute_of(t), [0, 0, 1, 1, 2, 59])
    edges = np.arange(0.0, 3661.0, 60.0)
    np.testing.assert_array_equal(minute_of(t), np.searchsorted(edges, t, side="right") - 1)


def test_minute_outcomes_counts_by_hand():
    agg = MinuteOutcomes()
    # Two chunks; minute 0: 2 ok (latest 59), minute 1: 1 ok + 1 of 435 (handshake).
    agg({"t_send": np.array([10.0, 59.0, 61.0]),
         "outcome": np.array([rc.OK, rc.OK, rc.OK], dtype=np.int8)})
    agg({"t_send": np.array([70.0]), "outcome": np.array([rc.WS_435], dtype=np.int8)})
    table = agg.table()
    assert table["t_send"].tolist() == [59.0, 61.0, 70.0]
    assert table["outcome"].tolist() == [rc.OK, rc.OK, rc.WS_435]
    assert table["count"].tolist() == [2, 1, 1]
    assert agg.refused_handshakes()["t_send"].tolist() == [70.0]


def test_minute_outcomes_latest_send_is_the_maximum_not_the_last_row():
    # Rows come in completion order, so a bin's latest send may be anywhere in a chunk.
    agg = MinuteOutcomes()
    agg({"t_send": np.array([59.0, 10.0, 61.0, 30.0, 65.0, 62.0]),
         "outcome": np.array([rc.OK, rc.OK, rc.HTTP_434, rc.OK, rc.HTTP_434, rc.HTTP_434],
                             dtype=np.int8)})
    agg({"t_send": np.array([20.0]), "outcome": np.array([rc.OK], dtype=np.int8)})
    table = agg.table()
    assert table["t_send"].tolist() == [59.0, 65.0]
    assert table["outcome"].tolist() == [rc.OK, rc.HTTP_434]
    assert table["count"].tolist() == [4, 3]


@pytest.fixture(scope="module")
def results():
    return {mode: sim.run(None, tiers=["RPC"], overrides=SHORT, records=mode)
            for mode in ("attempts", "windows", "none")}


def test_records_modes_choose_the_tables_not_the_results(results, tmp_path):
    written = {mode: r.write(tmp_path / mode) for mode, r in results.items()}
    have = {mode: {p.name for p in f.iterdir()} for mode, f in written.items()}
    assert {"requests.parquet", "windows.parquet", "streams.parquet"} <= have["attempts"]
    assert "requests.parquet" not in have["windows"]
    assert {"windows.parquet", "streams.parquet"} <= have["windows"]
    assert not {p for p in have["none"] if p.endswith(".parquet")}
    summaries = {m: (f / "summary.json").read_bytes() for m, f in written.items()}
    assert summaries["attempts"] == summaries["windows"] == summaries["none"]
    # The plots come from the per-minute counts: the same picture whatever is written.
    for png in ("outcomes_over_time.png", "cu_per_window.png"):
        assert (written["attempts"] / png).read_bytes() == (written["none"] / png).read_bytes()


def test_requests_parquet_holds_every_attempt_and_is_zstd(results, tmp_path):
    r = results["attempts"]
    folder = r.write(tmp_path / "out")
    f = pq.ParquetFile(folder / "requests.parquet")
    assert f.metadata.row_group(0).column(0).compression == "ZSTD"
    table = pd.read_parquet(folder / "requests.parquet")
    tier = r.summary.tier("RPC")
    assert len(table) == tier.attempts
    assert int((table["outcome"] == "ok").sum()) == tier.outcomes["ok"]
    pd.testing.assert_frame_equal(table, r.attempts)


def test_minutes_add_up_to_the_attempts(results):
    r = results["attempts"]
    assert int(r.minutes["count"].sum()) == r.summary.tier("RPC").attempts
    by_outcome = r.minutes.groupby("outcome", observed=True)["count"].sum()
    for outcome, n in r.summary.tier("RPC").outcomes.items():
        assert int(by_outcome.get(outcome, 0)) == n, outcome


def test_unknown_records_mode_is_refused():
    with pytest.raises(ValueError, match="records must be one of"):
        sim.run(None, tiers=["RPC"], overrides=["duration=10"], records="everything")


def test_requests_parquet_written_while_workers_run_is_the_one_written_after(
        tmp_path, monkeypatch):
    from sim.config.resolved import load
    from sim.runner import records
    from sim.runner import run as runner

    loaded = load(None, [*SHORT, 'tiers=["RPC", "Search"]'])
    sequential = runner.run(loaded, jobs=1)
    assert sequential.records.written is None
    tiers = [t.attempts for t in sequential.summary.tiers]
    # A row group one row larger than the first tier: the first tier's rows wait for the
    # second's, so the writer must carry pending rows from one tier to the next.
    monkeypatch.setattr(records, "ROW_GROUP_ROWS", tiers[0] + 1)
    parallel = runner.run(loaded, jobs=2)
    assert parallel.records.written is not None and parallel.records.written.exists()
    rows = parallel.records.write_parquet(tmp_path / "parallel.parquet")
    assert rows == sequential.records.write_parquet(tmp_path / "sequential.parquet") == sum(tiers)
    f = pq.ParquetFile(tmp_path / "parallel.parquet")
    assert [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)] == [sum(tiers)]
    assert ((tmp_path / "parallel.parquet").read_bytes()
            == (tmp_path / "sequential.parquet").read_bytes())
    # Only when the rows are wanted: a windows-only run writes nothing ahead.
    assert runner.run(loaded, jobs=2, records="windows").records.written is None


def test_a_writer_binds_the_row_layout_by_name():
    names = [n for n, _ in rc.ATTEMPT_COLUMNS]
    assert rc.ATTEMPT_ROW.packer(*names) is rc.ATTEMPT_ROW.pack
    swapped = [names[1], names[0], *names[2:]]
    with pytest.raises(RuntimeError, match="row layout"):
        rc.ATTEMPT_ROW.packer(*swapped)
    with pytest.raises(RuntimeError, match="row layout"):
        rc.REQUEST_ROW.packer(*[n for n, _ in rc.REQUEST_COLUMNS][:-1])
