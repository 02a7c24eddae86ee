"""The demand drawn once (``sim.workload.demand_spool``): the spooled plan hands out the
blocks the draw made, bit for bit and block for block, without its trace; a run reads a
trace once whatever its number of tiers."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_replay_model import _trace

import sim
from sim.config.resolved import validate
from sim.config.selection import load_scenario
from sim.model.engine import TierRun
from sim.traces.replay import ReplayStream
from sim.workload.demand import build_plan
from sim.workload.demand_spool import SpooledPlan, spool_demand

COLUMNS = ("t", "source", "method", "key", "region", "items", "reserve", "actual", "service_s")


def _trace_plan(trace):
    raw = {
        "name": "replay", "duration": 700, "seed": 3,
        "tiers": ["RPC", "RPC + Search", "Advanced bundle"], "account": {"keys": ["x"]},
        "sources": [{"name": "rec", "key": "x", "trace": str(trace)},
                    {"name": "synthetic", "key": "x", "arrival": {"process": "poisson",
                                                                 "rate": 3.0}}],
    }
    return validate(raw, "test")


def _assert_same_blocks(spooled, plan):
    drawn = list(plan.demand_blocks())
    read = list(spooled.demand_blocks())
    assert len(read) == len(drawn) > 1
    for a, b in zip(read, drawn, strict=True):
        for c in COLUMNS:
            x, y = getattr(a, c), getattr(b, c)
            assert x.dtype == y.dtype, c
            np.testing.assert_array_equal(x, y, err_msg=c)


@pytest.mark.parametrize("path", ["workloads/mixed-bundle.toml", "workloads/indexer.toml"])
def test_spooled_blocks_are_the_drawn_blocks(tmp_path, path):
    loaded = load_scenario(path, overrides=["duration=400"])
    spooled = spool_demand(build_plan(loaded), tmp_path)
    _assert_same_blocks(spooled, build_plan(loaded))


@pytest.mark.parametrize("group_rows", [7, 1000, 1 << 16])
def test_blocks_split_over_or_gathered_in_row_groups_are_read_back(tmp_path, group_rows):
    """A block over several row groups, several blocks in one, one group for all."""
    loaded = load_scenario("workloads/mixed-bundle.toml", overrides=["duration=400"])
    spooled = spool_demand(build_plan(loaded), tmp_path, group_rows=group_rows)
    groups = pq.ParquetFile(spooled.demand_path).metadata.num_row_groups
    assert groups == -(-sum(spooled.block_rows) // group_rows)
    _assert_same_blocks(spooled, build_plan(loaded))


def test_the_spooled_plan_needs_no_trace_and_pickles_small(tmp_path):
    _, trace = _trace(tmp_path, n=4000)
    loaded = _trace_plan(trace)
    spooled = spool_demand(build_plan(loaded), tmp_path)
    moved = trace.rename(tmp_path / "gone.parquet")
    copy = pickle.loads(pickle.dumps(spooled))
    assert isinstance(copy, SpooledPlan) and not copy.traces
    assert len(pickle.dumps(spooled)) < 20_000  # the tables and scenario, no demand rows
    trace_free = [TierRun(copy, t).run().attempts for t in loaded.tiers]
    moved.rename(trace)
    plan = build_plan(loaded)
    for tier, rows in zip(loaded.tiers, trace_free, strict=True):
        fresh = TierRun(plan, tier).run().attempts
        for name, col in fresh.items():
            np.testing.assert_array_equal(rows[name], col, err_msg=f"{tier.name}: {name}")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_run_reads_its_trace_once_however_many_tiers(tmp_path, monkeypatch, jobs):
    # One pass to scan the trace (the plan's methods and keys), one to draw the demand:
    # two passes for three tiers (each tier read it again before).
    _, trace = _trace(tmp_path, n=3000)
    passes = []
    chunks = ReplayStream.chunks

    def counted(self, *a, **kw):
        passes.append(1)
        return chunks(self, *a, **kw)

    monkeypatch.setattr(ReplayStream, "chunks", counted)
    out = sim.run(_trace_plan(trace), records="none", jobs=jobs)
    assert len(out.summary.tiers) == 3
    assert len(passes) == 2


@pytest.mark.parametrize("group_rows", [7, 1000, 4096])
def test_blocks_read_ahead_across_reads_with_empty_blocks(tmp_path, monkeypatch, group_rows):
    """Reads of 1,000 rows at least (``READ_ROWS`` made small): blocks carried over from
    one read to the next, longer than a read, empty, at the file's end."""
    from sim.workload import demand_spool
    from sim.workload.demand import Demand

    monkeypatch.setattr(demand_spool, "READ_ROWS", 1000)
    loaded = load_scenario("workloads/mixed-bundle.toml", overrides=["duration=400"])
    plan = build_plan(loaded)
    rows = [np.concatenate([getattr(b, c) for b in plan.demand_blocks()]) for c in COLUMNS]
    sizes = [0, 5, 0, 1500, 3, 0, 999, 2, 2500, 1, 0, 4000, 0]
    assert sum(sizes) <= len(rows[0])
    edges = np.cumsum([0, *sizes])
    crafted = [Demand(*(r[a:b] for r in rows)) for a, b in zip(edges, edges[1:], strict=False)]
    plan.demand_blocks = lambda *a, **k: iter(crafted)
    spooled = spool_demand(plan, tmp_path, group_rows=group_rows)
    read = list(spooled.demand_blocks())
    assert [len(b) for b in read] == sizes
    for a, b in zip(read, crafted, strict=True):
        for c in COLUMNS:
            x, y = getattr(a, c), getattr(b, c)
            assert x.dtype == y.dtype, c
            np.testing.assert_array_equal(x, y, err_msg=c)


def test_a_spool_shorter_than_its_blocks_says_so(tmp_path):
    loaded = load_scenario("workloads/mixed-bundle.toml", overrides=["duration=120"])
    spooled = spool_demand(build_plan(loaded), tmp_path)
    spooled.block_rows = (*spooled.block_rows, 10)
    with pytest.raises(ValueError, match="ends before its blocks do"):
        list(spooled.demand_blocks())
