"""Replay streamed from the file (``ReplayStream``): the rows of the in-memory load, in
the same order with the same draws, read a row group at a time."""

from __future__ import annotations

import numpy as np
import pytest
from crafted_traces import KEY, write_trace

from sim.traces import replay
from sim.traces.replay import ReplayStream, load_replay, max_overlap_rows

OTHER_KEY = "a81c5e0f9b2d47c6813e7f0a5c9d2b64"


def _rows(seed: int, n: int, order: str) -> list[dict]:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 300, n)
    if order != "shuffled":
        t = np.sort(t)
    if order == "jittered":
        t = t + rng.uniform(0, 5, n)
    t = np.round(t, 1)  # ties between rows: file order decides
    rows = []
    for i in range(n):
        row = {"t": float(t[i]), "method": str(rng.choice(["svc_call", "svc_pendingBlock", "x"])),
               "key": str(rng.choice([KEY, OTHER_KEY])),
               "status": int(rng.choice([200, 434, 200, -32005])),
               "region": str(rng.choice(["eu", "us"])) if rng.random() < 0.8 else None,
               "items": int(rng.integers(0, 3)), "cu": float(rng.choice([1.0, 20.0]))}
        if rng.random() < 0.5:
            row["body_hash"] = f"{int(rng.integers(0, 4)):016x}"
        rows.append(row)
    return rows


def _streamed(stream: ReplayStream) -> dict[str, np.ndarray]:
    chunks = list(stream.chunks())
    names = stream.names
    out = {}
    for col in ("t_s", "copy", "api", "items", "gas_used", "cu"):
        out[col] = np.concatenate([c[col] for c in chunks])
    for col in ("method", "key", "region", "profiles"):  # codes to names
        lut = np.array([*names[col], None], dtype=object)
        out[col] = lut[np.concatenate([c[col] for c in chunks])]
    return out


@pytest.mark.parametrize("seed", range(24))
def test_the_stream_gives_the_rows_of_the_in_memory_load(tmp_path, seed, monkeypatch):
    order = ("sorted", "jittered", "shuffled")[seed % 3]
    chunk_rows = (1000, 37, 100, 7)[seed % 4]
    # slices of a row group handed on after the merge: whole groups, a few rows, one row
    monkeypatch.setattr(replay, "SLICE_ROWS", (1 << 16, 13, 1)[seed // 4 % 3])
    trace = write_trace(tmp_path / "t.parquet", _rows(seed, 400, order), chunk_rows=chunk_rows)
    rng = np.random.default_rng(seed)
    kw = {"speed": float(rng.choice([1.0, 2.5])),
          "load_multiplier": float(rng.choice([1.0, 2.0, 2.5, 0.4, 3.0])),
          "phase_shift_s": float(rng.choice([0.0, 3.3])),
          "drop_recorded_retries": seed % 5 != 0,
          "time_range_s": None if seed % 2 else (10.0, 200.0),
          "retry_window_s": float(rng.choice([60.0, 5.0]))}
    whole = load_replay(trace, rng=np.random.default_rng(seed), **kw)
    stream = ReplayStream(trace, rng=np.random.default_rng(seed), **kw)
    got = _streamed(stream)
    assert len(whole) > 0
    assert (stream.t0_ns, stream.dropped_retries) == (whole.t0_ns, whole.dropped_retries)
    for col in ("t_s", "copy", "api", "items", "gas_used", "cu"):
        np.testing.assert_array_equal(got[col], getattr(whole, col), err_msg=col)
    for col in ("method", "key", "region"):
        names = np.array([*getattr(whole, f"{col}_categories"), None], dtype=object)
        np.testing.assert_array_equal(got[col], names[getattr(whole, col)], err_msg=col)
    np.testing.assert_array_equal(got["profiles"], whole.profiles)
    # a second pass reads the file again and gives the same rows
    again = _streamed(stream)
    np.testing.assert_array_equal(again["t_s"], got["t_s"])


def _reads(monkeypatch):
    """Row groups read so far, as the stream reads them."""
    seen: list[int] = []
    read = ReplayStream._read_group

    def spy(self, pf, g, *args):
        seen.append(g)
        return read(self, pf, g, *args)

    monkeypatch.setattr(ReplayStream, "_read_group", spy)
    return seen


@pytest.mark.parametrize("k", [1.0, 2.5])
def test_a_trace_in_time_order_is_read_one_row_group_at_a_time(tmp_path, monkeypatch, k):
    rows = [{"t": i * 0.5} for i in range(2000)]  # 1000 s, 10 groups of 100 s
    trace = write_trace(tmp_path / "t.parquet", rows, chunk_rows=200)
    seen = _reads(monkeypatch)
    stream = ReplayStream(trace, load_multiplier=k, rng=np.random.default_rng(1))
    assert stream.max_open_rows() == 200
    held = []
    for chunk in stream.chunks():
        held.append(len(seen))
        assert chunk["t_s"][-1] < 100.0 * len(seen) + 12.0  # nothing from unread groups
    assert seen == list(range(10))
    assert held[0] == 1  # the first rows come out after one group is read
    assert all(h <= i + 2 for i, h in enumerate(held))


def test_a_replay_shorter_than_the_trace_stops_reading(tmp_path, monkeypatch):
    trace = write_trace(tmp_path / "t.parquet", [{"t": i * 0.5} for i in range(2000)],
                        chunk_rows=200)
    seen = _reads(monkeypatch)
    stream = ReplayStream(trace, rng=np.random.default_rng(1))
    last = [c["t_s"][-1] for c in stream.chunks(until_s=250.0)][-1]
    assert last >= 250.0 - 0.5 and seen == [0, 1, 2]


def test_overlapping_row_groups_are_held_together(tmp_path, monkeypatch):
    # groups of 100 rows; group 1's times reach into group 2's
    t = np.concatenate([np.arange(100), np.arange(100, 200) + 50.0, np.arange(200, 300)])
    trace = write_trace(tmp_path / "t.parquet", [{"t": float(x)} for x in t], chunk_rows=100)
    stream = ReplayStream(trace, rng=np.random.default_rng(1))
    assert stream.max_open_rows() == 200
    got = np.concatenate([c["t_s"] for c in stream.chunks()])
    np.testing.assert_array_equal(got, np.sort(t))


def test_max_overlap_rows_closed_forms():
    assert max_overlap_rows([]) == 0
    assert max_overlap_rows([(0, 0, 9, 5), (1, 10, 19, 7)]) == 7  # apart: one at a time
    assert max_overlap_rows([(0, 0, 10, 5), (1, 10, 19, 7)]) == 12  # a shared instant
    # three groups spanning everything: all together, whatever their order in the file
    assert max_overlap_rows([(0, 5, 90, 3), (1, 0, 100, 4), (2, 50, 60, 2)]) == 9
