"""Replay loader: speed / multiplier / shift / range semantics, recorded retries, and a
direct per-window CU check against pandas on the sample."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from crafted_traces import KEY, T0, S, write_trace

from sim.core.errors import CapsimError
from sim.traces.importers import import_trace
from sim.traces.replay import load_replay

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "workloads" / "traces"


def load(path, **kw):
    kw.setdefault("rng", np.random.default_rng(7))
    return load_replay(path, **kw)


def test_speed_divides_inter_arrival_times(tmp_path):
    p = write_trace(tmp_path / "t.parquet", [{"t": t} for t in (5, 6, 8, 12)])
    r = load(p, speed=2.0)
    assert r.t_s.tolist() == [0.0, 0.5, 1.5, 3.5]
    assert r.t0_ns == T0 + 5 * S


def test_phase_shift_moves_requests_against_window_boundaries(tmp_path):
    p = write_trace(tmp_path / "t.parquet", [{"t": t} for t in (0, 6, 11.5, 13)])
    r = load(p, phase_shift_s=1.0)
    assert r.t_s.tolist() == [1.0, 7.0, 12.5, 14.0]
    windows = (r.t0_ns + np.round(r.t_s * S).astype(np.int64)) // (12 * S)
    # unshifted: windows 0,0,0,1 -> shifted by 1 s the 11.5 s request crosses into window 1
    assert (windows - T0 // (12 * S)).tolist() == [0, 0, 1, 1]


def test_time_range_is_half_open_and_relative_to_the_trace_start(tmp_path):
    p = write_trace(tmp_path / "t.parquet", [{"t": t} for t in (30, 0, 10, 20, 40, 29.999)])
    r = load(p, time_range_s=(10.0, 30.0))
    assert r.t_s.tolist() == pytest.approx([0.0, 10.0, 19.999])
    assert r.t0_ns == T0 + 10 * S
    combined = load(p, time_range_s=(10.0, 30.0), speed=2.0, phase_shift_s=3.0)
    assert combined.t_s.tolist() == pytest.approx([3.0, 8.0, 12.9995])


def test_integer_multiplier_superposes_shifted_copies(tmp_path):
    times = [0, 1, 2.5, 7, 30]
    p = write_trace(tmp_path / "t.parquet", [{"t": t, "items": i} for i, t in enumerate(times)])
    r = load(p, load_multiplier=3.0)
    assert len(r) == 15 and np.all(np.diff(r.t_s) >= 0)
    offsets = []
    for c in range(3):
        sel = r.copy == c
        assert sorted(r.items[sel].tolist()) == list(range(5))
        order = np.argsort(r.items[sel])
        offsets.append(r.t_s[sel][order] - np.array(times))
    assert np.allclose(offsets[0], 0.0)
    for c in (1, 2):
        assert np.allclose(offsets[c], offsets[c][0]) and 0 <= offsets[c][0] < 12
    assert offsets[1][0] != offsets[2][0]


def test_fractional_multiplier_thins_one_more_copy(tmp_path):
    n = 20_000
    p = write_trace(tmp_path / "t.parquet", [{"t": i * 0.01} for i in range(n)])
    r = load(p, load_multiplier=2.5, drop_recorded_retries=False)
    counts = np.bincount(r.copy)
    assert counts[0] == counts[1] == n
    assert abs(counts[2] - n / 2) < 4 * math.sqrt(n * 0.25)
    thin = load(p, load_multiplier=0.3, drop_recorded_retries=False)
    assert set(thin.copy.tolist()) == {0}
    assert abs(len(thin) - 0.3 * n) < 4 * math.sqrt(n * 0.21)
    base = np.arange(n) * 0.01
    assert np.allclose(thin.t_s, base[np.round(thin.t_s / 0.01).astype(int)])  # unshifted


def test_same_rng_state_gives_the_same_replay(tmp_path):
    p = write_trace(tmp_path / "t.parquet", [{"t": i * 0.3} for i in range(200)])
    a = load(p, load_multiplier=1.7, rng=np.random.default_rng(11))
    b = load(p, load_multiplier=1.7, rng=np.random.default_rng(11))
    c = load(p, load_multiplier=1.7, rng=np.random.default_rng(12))
    assert np.array_equal(a.t_s, b.t_s) and np.array_equal(a.copy, b.copy)
    assert not np.array_equal(a.t_s, c.t_s)


RETRY_ROWS = [
    # t, status, body_hash, key-suffix, items, profiles, expected_dropped
    (0, 434, "aaaaaaaaaaaaaaaa", "", None, None, False),   # throttled original
    (5, 200, "aaaaaaaaaaaaaaaa", "", None, None, True),    # its retry
    (70, 200, "aaaaaaaaaaaaaaaa", "", None, None, False),  # 70 s after the throttle
    (6, 200, "aaaaaaaaaaaaaaaa", "x", None, None, False),  # another key
    (7, 200, "bbbbbbbbbbbbbbbb", "", None, None, False),   # another body
    (100, -32005, "cccccccccccccccc", "", None, None, False),
    (130, -32005, "cccccccccccccccc", "", None, None, True),  # retry, itself throttled
    (185, 200, "cccccccccccccccc", "", None, None, True),  # 55 s after the 2nd throttle
    (200, 430, None, "", 2, "fast,deep", False),
    (203, 200, None, "", 2, "fast,deep", True),            # no hash: same items/profiles
    (204, 200, None, "", 2, "deep,fast", False),           # other profiles
    (205, 200, None, "", 1, "fast", False),
    (300, 435, "dddddddddddddddd", "", None, None, False),
    (300.5, 200, "dddddddddddddddd", "", None, None, True),
]


def _retry_trace(tmp_path):
    rows = [{"t": t, "status": st, "body_hash": h, "key": KEY + sfx, "items": it,
             "profiles": pr, "method": "svc_call" if it is None else "POST /v1/size",
             "api": "rpc" if it is None else "search"}
            for t, st, h, sfx, it, pr, _ in RETRY_ROWS]
    return write_trace(tmp_path / "t.parquet", rows)


@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_recorded_retries_are_recognised_and_dropped(tmp_path, chunk_rows):
    p = _retry_trace(tmp_path)
    r = load(p, chunk_rows=chunk_rows)
    expected_kept = sorted(t for t, *_, dropped in RETRY_ROWS if not dropped)
    assert r.dropped_retries == sum(d for *_, d in RETRY_ROWS)
    assert (r.t_s + (r.t0_ns - T0) / S).tolist() == pytest.approx(expected_kept)
    kept_all = load(p, drop_recorded_retries=False)
    assert len(kept_all) == len(RETRY_ROWS) and kept_all.dropped_retries == 0


def test_a_throttle_just_before_the_range_still_marks_the_retry(tmp_path):
    p = _retry_trace(tmp_path)
    r = load(p, time_range_s=(2.0, 90.0))
    # rows at 5 (a retry of the 0 s throttle) is dropped; 6, 7 and 70 are kept
    assert r.dropped_retries == 1
    assert (r.t_s + 6).tolist() == [6.0, 7.0, 70.0]
    assert r.t0_ns == T0 + 6 * S


def test_unsorted_input_and_small_chunks_give_the_same_replay(tmp_path):
    times = [9, 3, 27, 1, 14, 3.5, 40]
    a = load(write_trace(tmp_path / "a.parquet", [{"t": t} for t in times], chunk_rows=2))
    b = load(write_trace(tmp_path / "b.parquet", [{"t": t} for t in sorted(times)]),
             chunk_rows=3)
    assert a.t_s.tolist() == b.t_s.tolist() == [t - 1 for t in sorted(times)]


def test_bad_arguments_and_files_are_capsim_errors(tmp_path):
    p = write_trace(tmp_path / "t.parquet", [{"t": 0}])
    for kw in ({"speed": 0}, {"load_multiplier": -1}, {"phase_shift_s": -1},
               {"time_range_s": (5, 5)}, {"speed": math.nan}):
        with pytest.raises(CapsimError):
            load(p, **kw)
    with pytest.raises(CapsimError, match="capsim trace import"):
        load(SAMPLES / "sample.csv")
    empty = load(p, time_range_s=(100.0, 200.0))
    assert len(empty) == 0


# -- direct computation on the sample ------------------------------------------------------

PRICING = tomllib.loads((ROOT / "sim" / "data" / "pricing.toml").read_text())


def cu_of(api, method, items, profiles, gas, cu):
    """CU of one request from the pricing table, written out independently."""
    if cu == cu and cu is not None:  # recorded (not NaN / None)
        return cu
    if api == "rpc":
        return PRICING["rpc"]["method_cu"].get(method, PRICING["rpc"]["default_method_cu"])
    if method == "POST /v1/size":
        s = PRICING["sizing"]
        if gas == gas and gas is not None:
            return items * s["item_base_cu"] + gas * s["cu_per_gas"]
        return sum(s["item_base_cu"] + s["profile_gas_cap"][p] * s["cu_per_gas"]
                   for p in profiles.split(","))
    return PRICING["websocket"]["connect_cu"]


def sample_frame() -> pd.DataFrame:
    df = pd.read_csv(SAMPLES / "sample.csv", keep_default_na=True)
    df["time_ns"] = pd.to_datetime(df["timestamp"], utc=True).dt.as_unit("ns").astype("int64")
    df["window"] = df["time_ns"] // (12 * S)
    df["cu_row"] = [cu_of(a, m, i, p, g, c) for a, m, i, p, g, c in zip(
        df["api"], df["method"], df["items"], df["profiles"], df["gas_used"], df["cu"],
        strict=True)]
    return df


def replay_windows(r) -> pd.Series:
    windows = (r.t0_ns + np.round(r.t_s * S).astype(np.int64)) // (12 * S)
    cu = [cu_of(r.api_categories[a], r.method_categories[m], i, p, g, c)
          for a, m, i, p, g, c in zip(r.api, r.method, r.items, r.profiles, r.gas_used, r.cu,
                                      strict=True)]
    return pd.Series(cu, index=windows).groupby(level=0).sum()


def test_per_window_cu_matches_a_direct_pandas_computation(tmp_path):
    df = sample_frame()
    expected = df.groupby("window")["cu_row"].sum()
    out = tmp_path / "s.parquet"
    import_trace(SAMPLES / "sample.csv", out)
    got = replay_windows(load(out, drop_recorded_retries=False))
    assert got.index.tolist() == expected.index.tolist()
    assert np.allclose(got.to_numpy(), expected.to_numpy())
    assert len(expected) >= 3 and expected.max() > 0


def test_recorded_retries_in_the_sample_match_a_brute_force_search(tmp_path):
    df = sample_frame().sort_values("time_ns", kind="stable").reset_index(drop=True)
    throttles = {434, -32005, 430, 435}
    dropped = []
    for i, row in df.iterrows():
        earlier = df.iloc[:i]
        same = earlier[(earlier["X-Api-Key"] == row["X-Api-Key"])
                       & (earlier["method"] == row["method"])
                       & (earlier["body_hash"] == row["body_hash"])
                       & earlier["status"].isin(throttles)
                       & (row["time_ns"] - earlier["time_ns"] <= 60 * S)]
        dropped.append(len(same) > 0)
    df["dropped"] = dropped
    assert 1 <= df["dropped"].sum() < len(df)
    out = tmp_path / "s.parquet"
    import_trace(SAMPLES / "sample.csv", out)
    r = load(out)
    assert r.dropped_retries == df["dropped"].sum()
    expected = df[~df["dropped"]].groupby("window")["cu_row"].sum()
    got = replay_windows(r)
    assert got.index.tolist() == expected.index.tolist()
    assert np.allclose(got.to_numpy(), expected.to_numpy())
