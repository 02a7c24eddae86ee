"""A recording looped over the run (``repeat = "tile"``), the load multiplier's copies
spread over its period (``copies_spread = "period"``) and loops thinned by the hour:
counts and offsets from the recording's own times, worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from crafted_traces import write_trace

from sim.core.errors import CapsimError
from sim.traces import tiling
from sim.traces.replay import ReplayStream
from sim.traces.tiling import Scaling

SESSION = [0.0, 0.4, 0.9, 5.0, 5.2, 17.0, 17.1, 29.0]  # an 8-call session, 29 s long


def _stream(path, scaling=None, **kw) -> ReplayStream:
    kw.setdefault("drop_recorded_retries", False)
    return ReplayStream(path, rng=np.random.default_rng(5), scaling=scaling, **kw)


def _times(stream: ReplayStream, until_s: float = math.inf):
    chunks = list(stream.chunks(until_s))
    if not chunks:
        return np.zeros(0), np.zeros(0, int)
    return (np.concatenate([c["t_s"] for c in chunks]),
            np.concatenate([c["copy"] for c in chunks]))


def _session(tmp_path, times=SESSION, chunk_rows=1000):
    return write_trace(tmp_path / "s.parquet", [{"t": t} for t in times],
                       chunk_rows=chunk_rows)


def _windows(t: np.ndarray, duration: float) -> np.ndarray:
    return np.bincount((t[t < duration] // 12).astype(int), minlength=int(duration // 12))


def test_the_default_period_is_the_length_plus_one_mean_gap(tmp_path):
    stream = _stream(_session(tmp_path), Scaling(repeat="tile", until_s=100))
    assert stream.period_s() == pytest.approx(29.0 * 8 / 7)
    stream = _stream(_session(tmp_path), Scaling(repeat="tile", until_s=100), speed=2)
    assert stream.period_s() == pytest.approx(14.5 * 8 / 7)


@pytest.mark.parametrize("hold", [True, False])
@pytest.mark.parametrize("shift", [0.0, 3.5])
def test_loops_follow_each_other_by_the_period_until_the_run_ends(tmp_path, monkeypatch,
                                                                   hold, shift):
    if not hold:  # streamed again from the file for every loop
        monkeypatch.setattr(tiling, "HOLD_ROWS", 0)
    duration, period = 200.0, 29.0 * 8 / 7
    stream = _stream(_session(tmp_path, chunk_rows=3),
                     Scaling(repeat="tile", until_s=duration), phase_shift_s=shift)
    t, cp = _times(stream)
    # loop j: the session shifted by j * P, for every loop that starts before the end
    loops = math.ceil((duration - shift) / period)
    want = np.sort(np.array([s + j * period + shift for j in range(loops) for s in SESSION]))
    np.testing.assert_allclose(t, want, rtol=0, atol=1e-9)
    assert (cp == 0).all()
    assert len(t) == loops * len(SESSION)  # 7 loops of 8 rows (the last runs past 200 s)
    assert loops == 7 if shift == 0 else loops == 6


def test_a_given_period_wins_and_the_run_keeps_what_starts_before_its_end(tmp_path):
    stream = _stream(_session(tmp_path), Scaling(repeat="tile", period_s=60.0, until_s=150))
    t, _ = _times(stream)
    np.testing.assert_allclose(t, [s + j * 60 for j in range(3) for s in SESSION])
    t, _ = _times(stream, until_s=150)  # the run's pass: rows at or past the end may follow
    assert (t[t < 150] == [s + j * 60 for j in range(3) for s in SESSION if s + j * 60 < 150]
            ).all()


def test_loops_times_copies(tmp_path):
    """k = 2.5 on every loop: two whole copies, one thinned to half, 12-s offsets."""
    stream = _stream(_session(tmp_path), Scaling(repeat="tile", until_s=3600),
                     load_multiplier=2.5)
    t, cp = _times(stream)
    loops = math.ceil(3600 / (29.0 * 8 / 7))
    assert (np.bincount(cp)[:2] == loops * 8).all()
    thinned = np.bincount(cp)[2]
    n = loops * 8
    assert abs(thinned - n / 2) < 4 * math.sqrt(n / 4)


def test_hourly_weights_drop_the_loops_that_start_in_a_zero_hour(tmp_path):
    weights = tuple(1.0 if h % 2 == 0 else 0.0 for h in range(24))  # even UTC hours only
    period = 600.0
    stream = _stream(_session(tmp_path), Scaling(
        repeat="tile", period_s=period, until_s=4 * 3600, hourly_weights=weights,
        day_offset_s=3600.0, tile_rng=np.random.default_rng(1)))  # t = 0 is 01:00 UTC
    t, _ = _times(stream)
    starts = np.unique(np.floor(t / period)) * period
    # loops start every 600 s; 01:00-02:00 and 03:00-04:00 UTC are dropped
    assert list(starts) == [j * period for j in range(24) if (1 + j * period // 3600) % 2 == 0]


def test_hourly_weights_keep_a_loop_with_probability_weight_over_the_largest(tmp_path):
    weights = (2.0,) + (0.5,) * 23
    stream = _stream(_session(tmp_path, times=[0.0, 1.0]), Scaling(
        repeat="tile", period_s=2.0, until_s=3 * 3600, hourly_weights=weights,
        tile_rng=np.random.default_rng(3)))
    t, _ = _times(stream)
    loops = np.floor(t / 2.0)
    hour = (loops * 2.0 // 3600).astype(int)
    kept = [len(np.unique(loops[hour == h])) for h in range(3)]
    assert kept[0] == 1800  # weight 2 of 2: every loop
    for h in (1, 2):  # weight 0.5 of 2: a quarter, binomial
        assert abs(kept[h] - 450) < 4 * math.sqrt(1800 * 0.25 * 0.75)


def test_copies_spread_over_the_period_one_in_each_nth(tmp_path):
    n, period = 4, 29.0 * 8 / 7
    stream = _stream(_session(tmp_path), Scaling(
        copies_spread="period", spread_rng=np.random.default_rng(9)), load_multiplier=n)
    t, cp = _times(stream)
    for c in range(n):
        offset = t[cp == c] - np.array(SESSION)
        assert np.ptp(offset) < 1e-9  # one offset per copy
        assert c * period / n <= offset[0] < (c + 1) * period / n
    assert (t[cp == 0] == SESSION).all()
    # the offsets are the stream's: the same draws, in copy order
    u = np.random.default_rng(9).uniform(size=n - 1)
    want = [period * (c + u[c - 1]) / n for c in range(1, n)]
    got = [t[cp == c][0] - SESSION[0] for c in range(1, n)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_an_8_call_recording_tiled_over_an_hour_gives_spread_demand(tmp_path):
    """The issue's bar: the peak 12-s window within 2x of the mean window. The same
    recording's copies stacked by the default spread put the hour's requests into a
    handful of windows."""
    path = _session(tmp_path)
    duration = 3600.0
    tiled = _stream(path, Scaling(repeat="tile", until_s=duration, copies_spread="period",
                                  spread_rng=np.random.default_rng(2)), load_multiplier=5)
    w = _windows(_times(tiled)[0], duration)
    assert w.max() <= 2 * w.mean()
    assert w.sum() > 4000  # 5 copies of 8 calls every ~33 s: ~4,350 in the hour
    stacked = _stream(path, load_multiplier=540)  # about as many requests, stacked
    w_stacked = _windows(_times(stacked)[0], duration)
    assert w_stacked.sum() == 540 * 8
    assert w_stacked.max() > 50 * w_stacked.mean()  # 4 windows hold everything


def test_spread_and_tiles_are_deterministic_and_reread_alike(tmp_path):
    path = _session(tmp_path)

    def scaling():
        return Scaling(repeat="tile", until_s=900, copies_spread="period",
                       hourly_weights=(1.0, 0.3) * 12, spread_rng=np.random.default_rng(4),
                       tile_rng=np.random.default_rng(6))

    a = _stream(path, scaling(), load_multiplier=3.5)
    first, again = _times(a), _times(a)  # a second pass of one stream
    other = _times(_stream(path, scaling(), load_multiplier=3.5))
    for x, y in ((first, again), (first, other)):
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[1])


def test_a_recording_without_length_needs_a_period(tmp_path):
    path = _session(tmp_path, times=[4.0])
    with pytest.raises(CapsimError, match="period_s") as err:
        _times(_stream(path, Scaling(repeat="tile", until_s=60,
                                     field="sources[0].replay.period_s")))
    assert err.value.field == "sources[0].replay.period_s"
    t, _ = _times(_stream(path, Scaling(repeat="tile", until_s=60, period_s=25)))
    np.testing.assert_allclose(t, [0.0, 25.0, 50.0])  # the first row replays at 0


def test_recorded_retries_are_counted_once_not_per_loop(tmp_path, monkeypatch):
    monkeypatch.setattr(tiling, "HOLD_ROWS", 0)
    rows = [{"t": 0.0, "status": 434, "body_hash": "00000000000000aa"},
            {"t": 1.0, "status": 200, "body_hash": "00000000000000aa"},
            {"t": 9.0, "status": 200, "body_hash": "00000000000000bb"}]
    path = write_trace(tmp_path / "r.parquet", rows)
    stream = _stream(path, Scaling(repeat="tile", until_s=100), drop_recorded_retries=True)
    t, _ = _times(stream)
    period = 9.0 * 2 / 1  # two rows left (0 s and 9 s): 9 s plus one gap of 9 s
    assert len(t) == 2 * math.ceil(100 / period)
    assert stream.dropped_retries == 1


def _random_trace(tmp_path, n=600, seed=3):
    rng = np.random.default_rng(seed)
    t = np.round(np.sort(rng.uniform(0, 240, n)), 1)  # ties: copy order, then file order
    rows = [{"t": float(x), "status": 434 if rng.random() < 0.05 else 200,
             "method": str(rng.choice(["svc_call", "svc_pendingBlock"])),
             "body_hash": f"{int(rng.integers(0, 40)):016x}"} for x in t]
    return write_trace(tmp_path / "big.parquet", rows, chunk_rows=97)


@pytest.mark.parametrize("case", [
    {"load_multiplier": 3.0},
    {"load_multiplier": 2.5, "phase_shift_s": 2.0},
    {"load_multiplier": 4.3, "speed": 3.0, "repeat": "tile", "until": 1500.0},
    {"load_multiplier": 2.0, "time_range_s": (30.0, 200.0), "repeat": "tile",
     "until": 900.0, "period_s": 170.0},
    {"load_multiplier": 1.7, "until": 700.0},
])
def test_copies_read_by_passes_of_their_own_give_the_one_pass_rows(tmp_path, monkeypatch,
                                                                   case):
    """A long recording's copies spread over its period are read a pass per copy (memory
    of a piece per copy, not of a period): the same rows, order, draws and retries."""
    case = dict(case)
    until = case.pop("until", math.inf)
    scaling = {"repeat": case.pop("repeat", "none"), "period_s": case.pop("period_s", None)}
    path = _random_trace(tmp_path)

    def streamed():
        stream = ReplayStream(path, rng=np.random.default_rng(8), scaling=Scaling(
            copies_spread="period", spread_rng=np.random.default_rng(4), until_s=until,
            **scaling), **case)
        chunks = list(stream.chunks(until))
        cols = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
        return cols, stream.dropped_retries, stream.t0_ns

    one_pass, retries, t0 = streamed()
    monkeypatch.setattr(tiling, "HOLD_ROWS", 10)
    apart, retries_apart, t0_apart = streamed()
    if until < math.inf:  # past the end, either may hand out more rows than the other
        keep = one_pass["t_s"] < until
        one_pass = {k: v[keep] for k, v in one_pass.items()}
        keep = apart["t_s"] < until
        apart = {k: v[keep] for k, v in apart.items()}
    assert set(apart) == set(one_pass)
    for k in one_pass:
        np.testing.assert_array_equal(apart[k], one_pass[k], err_msg=k)
    assert retries_apart == retries > 0 and t0_apart == t0
    assert len(np.unique(one_pass["copy"])) == math.ceil(case["load_multiplier"])
