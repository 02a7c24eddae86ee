"""The compiled engine takes its demand in runs of whole blocks (``FEED_ROWS``): how many
blocks it takes at a time changes no row, only how often the loop returns for more."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("numba")

from sim.compiled import engine as en  # noqa: E402
from sim.config.resolved import load  # noqa: E402
from sim.workload.demand import build_plan  # noqa: E402


def _loaded(duration: float):
    loaded = load(None, [f"duration={duration}", "streams=[]"])
    sc = loaded.scenario
    sc = sc.model_copy(update={"sources": [s for s in sc.sources if s.workers is None]})
    return replace(loaded, scenario=sc)


def _run(loaded, feed_rows: int, monkeypatch) -> tuple[dict, int, int]:
    """Attempt rows, demand rows and the number of times the loop asked for demand."""
    monkeypatch.setattr(en, "FEED_ROWS", feed_rows)
    calls = []
    original = en.CompiledTierRun._next_block

    def counted(self, blocks):
        calls.append(1)
        return original(self, blocks)

    monkeypatch.setattr(en.CompiledTierRun, "_next_block", counted)
    plan = build_plan(loaded)
    demand_rows = sum(len(b) for b in build_plan(loaded).demand_blocks())
    rows = en.CompiledTierRun(plan, loaded.tiers[0]).run().attempt_sink.read()
    return rows, demand_rows, len(calls)


def test_runs_of_blocks_give_the_rows_of_one_block_at_a_time(monkeypatch):
    loaded = _loaded(600.0)
    one, n_demand, calls_one = _run(loaded, 1, monkeypatch)
    big, _, calls_big = _run(loaded, 4096, monkeypatch)
    whole, _, calls_whole = _run(loaded, 1 << 40, monkeypatch)
    for other in (big, whole):
        assert one.keys() == other.keys()
        for name in one:
            np.testing.assert_array_equal(one[name], other[name], err_msg=name)
    # one request at least per demand row, and every row fed
    assert len(one["request_id"]) >= n_demand
    # FEED_ROWS=1: a return per block (more than 4096-row runs need); a run of at least
    # 4096 rows per return but the last, and one more to find the demand over
    assert calls_one > calls_big
    assert calls_big <= math.ceil(n_demand / 4096) + 1
    assert calls_whole == 2
