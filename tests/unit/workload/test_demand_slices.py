"""The open-loop demand does not depend on how the run is sliced.

The engine reads the demand one time slice at a time (``Plan.demand_blocks``), so memory
stays flat in the run's length. That is only sound if the slices add up to the demand of
the whole run, draw for draw. This holds by design (each source's arrivals come from an
``ArrivalStream`` that draws in fixed internal chunks, and each random attribute has its
own named stream drawn in request order), and these tests check it independently: the
same demand, column for column and bit for bit, whether drawn whole, by 60 s slices or
by slices of an arbitrary length.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from crafted_traces import KEY, write_trace
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_reference import reference_demand, reference_notes_and_tables
from test_replay_model import _trace
from whole_demand import whole_demand

from sim.config.arrivals import (
    BlockSync,
    ConstantRate,
    DailyProfile,
    OnOff,
    Poisson,
    Ramp,
    Spikes,
)
from sim.config.resolved import validate
from sim.config.selection import load_scenario
from sim.core.rng import stream
from sim.core.vocabulary import SIZE_METHOD
from sim.traces.importers import import_trace
from sim.workload.arrivals import ArrivalStream, arrival_count, arrival_times
from sim.workload.demand import RequestDrawer, build_plan

COLUMNS = ("t", "source", "method", "key", "region", "items", "reserve", "actual", "service_s")

PROCESSES = [
    Poisson(rate=40.0),
    ConstantRate(rate=7.0, phase=0.3),
    OnOff(rate_on=50.0, rate_off=5.0, mean_on_s=20.0, mean_off_s=40.0),
    DailyProfile(rate=30.0, peak_hour=15.0, amplitude=0.6),
    DailyProfile(rate=30.0, hourly_weights=[1.0 + (h % 5) for h in range(24)]),
    BlockSync(per_block=30, jitter_s=25.0, offset_s=-3.0, miss_probability=0.1),
    BlockSync(per_block=3, slot_s=0.01),  # more slots than one internal chunk
    Ramp(start_rate=0.0, end_rate=80.0, ramp_start_s=100.0, ramp_end_s=2000.0),
    Spikes(base_rate=10.0, spike_rate=90.0, spike_duration_s=45.0, at_s=(300.0, 900.0)),
]


def _sliced(spec, seed: int, duration_s: float, day_offset_s: float, edges) -> np.ndarray:
    arrivals = ArrivalStream(spec, stream(seed, "slices"), duration_s, day_offset_s)
    parts = [arrivals.until(e) for e in edges]
    parts.append(arrivals.until(np.inf))
    assert arrivals.count == sum(len(p) for p in parts)
    return np.concatenate(parts)


@pytest.mark.parametrize("spec", PROCESSES, ids=lambda s: s.process)
@settings(max_examples=15, deadline=None)
@given(slice_s=st.floats(0.5, 4000.0), seed=st.integers(0, 2**32 - 1),
       day_offset_s=st.floats(0.0, 86400.0))
def test_arrivals_sliced_equal_arrivals_whole(spec, slice_s, seed, day_offset_s):
    duration_s = 3600.0
    whole = arrival_times(spec, stream(seed, "slices"), duration_s, day_offset_s)
    edges = np.arange(1, int(duration_s // slice_s) + 1) * slice_s
    np.testing.assert_array_equal(_sliced(spec, seed, duration_s, day_offset_s, edges), whole)
    assert arrival_count(spec, stream(seed, "slices"), duration_s, day_offset_s) == len(whole)
    assert np.all(np.diff(whole) >= 0) and (whole.size == 0 or 0 <= whole[0] <= whole[-1] < 3600)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 700), min_size=1, max_size=6))
def test_request_draws_in_pieces_equal_one_draw(sizes):
    """Method mix, sizing (items, profiles, gas) and per-method service times."""
    plan = build_plan(load_scenario("workloads/mixed-bundle.toml", overrides=["duration=60"]))
    sc = plan.scenario
    src = next(s for s in sc.sources if len(s.mix) > 1 and SIZE_METHOD in s.mix)

    def drawer():
        return RequestDrawer(src, plan.tables, plan.loaded.pricing, sc, sc.seed)

    pieces = drawer()
    parts = [pieces.draw(n) for n in sizes]
    whole = drawer().draw(sum(sizes))
    for j in range(len(whole)):
        np.testing.assert_array_equal(np.concatenate([p[j] for p in parts]), whole[j])


def _assert_same_demand(plan, slice_s):
    whole = list(plan.demand_blocks(slice_s=plan.scenario.duration_s))
    assert len(whole) == 1
    blocks = list(plan.demand_blocks(slice_s=slice_s))
    assert len(blocks) > 1
    n_slices = int(np.ceil(plan.scenario.duration_s / slice_s))
    edges = np.arange(1, n_slices) * slice_s  # slice k is [edges[k-1], edges[k])
    for b in blocks:  # each block holds one slice of the run
        assert np.searchsorted(edges, b.t[0], "right") == np.searchsorted(edges, b.t[-1], "right")
    for c in COLUMNS:
        got = np.concatenate([getattr(b, c) for b in blocks])
        np.testing.assert_array_equal(got, getattr(whole[0], c), err_msg=c)
    assert len(whole[0]) == plan.open_count


@pytest.mark.parametrize("path", [None, "workloads/indexer.toml", "workloads/mixed-bundle.toml",
                                  "workloads/streams-bot.toml", "workloads/searcher.toml"])
@pytest.mark.parametrize("slice_s", [60.0, 7.3])
def test_demand_by_slices_equals_demand_whole(path, slice_s):
    _assert_same_demand(build_plan(load_scenario(path, overrides=["duration=1200"])), slice_s)


def test_a_trace_source_is_handed_out_by_slices_too(tmp_path):
    df, trace = _trace(tmp_path, n=2000)
    raw = {
        "name": "replay", "duration": 700, "tiers": [], "account": {"keys": ["x"]},
        "sources": [{"name": "rec", "key": "x", "trace": str(trace)},
                    {"name": "synthetic", "key": "x", "arrival": {"process": "poisson",
                                                                 "rate": 3.0}}],
    }
    plan = build_plan(validate(raw, "test"))
    _assert_same_demand(plan, 60.0)
    assert int((whole_demand(plan).source == 0).sum()) == len(df)


# --- a trace source streamed from its file ------------------------------------------

SHIPPED = Path(__file__).resolve().parents[3] / "workloads" / "traces"
REPLAY_OPTIONS = {
    "plain": {},
    "copies": {"speed": 3.0, "load_multiplier": 2.5, "phase_shift_s": 7.0},
    "thinned": {"load_multiplier": 0.6, "drop_recorded_retries": False,
                "time_range_s": [30.0, 400.0]},
    "mapped": {"method_map": {"*": "svc_call"}, "load_multiplier": 3},
}


@pytest.fixture(scope="module")
def shipped_traces(tmp_path_factory):
    """The shipped traces as canonical files, one of them in 19 row groups."""
    folder = tmp_path_factory.mktemp("shipped")
    out = {"sample.parquet": SHIPPED / "sample.parquet"}
    for name in ("sample.csv", "sample.jsonl", "sample.har", "sample-rpc.log",
                 "sample-size.log", "calibration-sample.csv"):
        out[name] = folder / f"{name}.parquet"
        import_trace(SHIPPED / name, out[name])
    out["groups"] = folder / "groups.parquet"
    import_trace(SHIPPED / "calibration-sample.csv", out["groups"], chunk_rows=97)
    return out


def _replay_plan(trace, replay: dict, duration=900, synthetic=False):
    sources = [{"name": "rec", "key": "k1", "trace": str(trace), "replay": replay}]
    if synthetic:
        sources.append({"name": "synthetic", "key": "k1",
                        "arrival": {"process": "poisson", "rate": 2.0}})
    raw = {"name": "replay", "duration": duration, "seed": 11, "tiers": [],
           "account": {"keys": ["k1"]}, "sources": sources}
    return build_plan(validate(raw, "test"))


def _assert_as_in_memory(plan):
    """The streamed plan holds what the whole trace loaded in memory gave."""
    notes, traces, extra, keys = reference_notes_and_tables(plan.loaded)
    assert [n for n in plan.notes if n in notes] == notes
    assert set(extra) <= set(plan.tables.methods)
    assert set(keys) <= set(plan.tables.key_pseudonyms)
    whole = whole_demand(plan)
    ref = reference_demand(plan, 0)
    mine = whole.source == 0
    assert int(mine.sum()) == len(ref[0])
    for name, col in zip(COLUMNS, ref, strict=True):
        np.testing.assert_array_equal(getattr(whole, name)[mine], col, err_msg=name)


@pytest.mark.parametrize("option", list(REPLAY_OPTIONS))
@pytest.mark.parametrize("name", ["sample.parquet", "sample.csv", "sample.jsonl", "sample.har",
                                  "sample-rpc.log", "sample-size.log",
                                  "calibration-sample.csv", "groups"])
def test_a_shipped_trace_streams_as_it_replayed_in_memory(shipped_traces, name, option):
    plan = _replay_plan(shipped_traces[name], REPLAY_OPTIONS[option],
                        synthetic=option == "mapped")
    _assert_as_in_memory(plan)
    _assert_same_demand(plan, 1.7)  # the samples span a minute or more


def _crafted_rows(seed: int, n: int, order: str) -> list[dict]:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 700, n)
    if order != "shuffled":
        t = np.sort(t)
    if order == "jittered":  # a few seconds out of order, across row groups
        t = t + rng.uniform(0, 5, n)
    t = np.round(t, 1)  # equal times: the file's order decides
    rows = []
    for i in range(n):
        sizing = rng.random() < 0.3
        row = {"t": float(t[i]), "key": str(rng.choice([KEY, "a81c5e0f9b2d47c6813e7f0a5c9d2b64"])),
               "status": int(rng.choice([200, 200, 434, -32005])),
               "region": str(rng.choice(["eu", "us"])) if rng.random() < 0.8 else None}
        if sizing:
            row.update(api="search", method=SIZE_METHOD, items=int(rng.integers(1, 3)))
            if rng.random() < 0.5:
                row["profiles"] = ",".join(["fast"] * row["items"])
        else:
            row.update(method=str(rng.choice(["svc_call", "eth_getLogs", "svc_pendingBlock"])))
            if rng.random() < 0.7:
                row["cu"] = float(rng.choice([1.0, 20.0]))
        if rng.random() < 0.6:
            row["body_hash"] = f"{int(rng.integers(0, 5)):016x}"
        rows.append(row)
    return rows


@pytest.mark.parametrize("order", ["sorted", "jittered", "shuffled"])
@pytest.mark.parametrize("option", list(REPLAY_OPTIONS))
def test_a_crafted_trace_in_many_row_groups_streams_as_in_memory(tmp_path, order, option):
    rows = _crafted_rows(7, 1500, order)
    trace = write_trace(tmp_path / "t.parquet", rows, chunk_rows=113)
    assert pq.ParquetFile(trace).metadata.num_row_groups == 14
    plan = _replay_plan(trace, REPLAY_OPTIONS[option], duration=600)
    _assert_as_in_memory(plan)
    _assert_same_demand(plan, 60.0)
    _assert_same_demand(plan, 7.3)
