"""Determinism and common random numbers.

Same scenario and seed => the same attempt records, bit for bit, however often the
plan is rebuilt and the model rerun, in whatever order or process the tiers run; another
seed => other records; and every tier replays the same open-loop demand.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest
from whole_demand import whole_demand

from sim.config.resolved import LoadedScenario, load
from sim.config.tiers import find_tier
from sim.model.engine import TierResult, TierRun
from sim.runner import run as runner
from sim.workload.demand import build_plan

# The built-in default scenario, two simulated minutes, retries on (their jitter is
# random too), and the closed-loop indexer (whose timing depends on the replies).
SHORT = ["duration=120"]
TIERS = ["RPC", "RPC + Search", "Advanced bundle"]
DEMAND_COLUMNS = ("t", "source", "method", "key", "region", "items", "reserve", "actual",
                  "service_s")


def same_columns(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> list[str]:
    """Names of the columns that differ (NaN equals NaN: a missing Retry-After)."""
    assert a.keys() == b.keys()
    differ = []
    for name in a:
        x, y = a[name], b[name]
        equal_nan = np.issubdtype(x.dtype, np.floating)
        if x.dtype != y.dtype or not np.array_equal(x, y, equal_nan=equal_nan):
            differ.append(name)
    return differ


def same_tree(a, b) -> bool:
    """Deep equality of nested dicts / lists / tuples / numpy arrays (NaN equals NaN)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            same_tree(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(
            same_tree(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(
            a, b, equal_nan=np.issubdtype(a.dtype, np.floating))
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    return a == b


def run_tier(loaded: LoadedScenario, name: str) -> TierResult:
    return TierRun(build_plan(loaded), find_tier(name, loaded.tiers)).run()


@pytest.mark.parametrize("tier", TIERS)
def test_same_seed_gives_identical_attempts_requests_and_windows(tier):
    first = run_tier(load(None, SHORT), tier)
    second = run_tier(load(None, SHORT), tier)  # a fresh load, plan and environment
    assert len(first.attempts["request_id"]) > 1000
    assert same_columns(first.attempts, second.attempts) == []
    assert same_columns(first.requests, second.requests) == []
    assert first.windows == second.windows
    assert first.daily_used == second.daily_used
    assert first.end_s == second.end_s
    assert first.connections == second.connections
    assert same_tree(asdict(first.websockets), asdict(second.websockets))


def test_the_runs_exercise_what_could_make_them_differ():
    """Retries (with jitter) and the closed loop really happen in these runs."""
    res = run_tier(load(None, SHORT), "RPC")
    a = res.attempts
    assert np.any(a["attempt"] > 1)
    plan = build_plan(load(None, SHORT))
    assert np.any(a["request_id"] >= len(whole_demand(plan)))  # closed-loop requests


def test_different_seeds_give_different_demand_and_attempts():
    base = load(None, SHORT)
    other = load(None, [*SHORT, "seed=12345"])
    assert base.scenario.seed != other.scenario.seed
    d1, d2 = whole_demand(build_plan(base)), whole_demand(build_plan(other))
    assert len(d1) != len(d2) or not np.array_equal(d1.t, d2.t)
    r1, r2 = run_tier(base, "RPC"), run_tier(other, "RPC")
    assert not np.array_equal(r1.attempts["t_send"], r2.attempts["t_send"])
    assert not np.array_equal(r1.attempts["t_send"][:100], r2.attempts["t_send"][:100])


def test_open_loop_demand_does_not_depend_on_the_tier_list():
    plans = [build_plan(load(None, [*SHORT, *extra])) for extra in (
        [],  # every tier of the catalog
        ['tiers=["RPC"]'],
        ['tiers=["Advanced bundle", "Streams"]'],
    )]
    assert [len(p.loaded.tiers) for p in plans] == [9, 1, 2]
    for plan in plans[1:]:
        for col in DEMAND_COLUMNS:
            np.testing.assert_array_equal(getattr(whole_demand(plans[0]), col),
                                          getattr(whole_demand(plan), col), err_msg=col)
        assert plan.tables.methods == plans[0].tables.methods
        assert plan.tables.sources == plans[0].tables.sources
        # closed-loop workers draw the same k-th request on every plan
        for src in plan.closed_sources:
            for worker in range(2):
                a = plans[0].drawer_for(src, worker).draw(64)
                b = plan.drawer_for(src, worker).draw(64)
                for x, y in zip(a, b, strict=True):
                    np.testing.assert_array_equal(x, y)


def test_every_tier_replays_the_same_open_loop_demand():
    loaded = load(None, SHORT)
    plan = build_plan(loaded)
    d = whole_demand(plan)
    n = len(d)
    for tier in loaded.tiers:
        a = TierRun(plan, tier).run().attempts
        first = (a["attempt"] == 1) & (a["request_id"] < n)
        rid = a["request_id"][first]
        # every open-loop request was sent exactly once as a first attempt, when drawn
        assert np.array_equal(np.sort(rid), np.arange(n)), tier.name
        np.testing.assert_array_equal(a["t_send"][first], d.t[rid])
        np.testing.assert_array_equal(a["method"][first], d.method[rid])
        np.testing.assert_array_equal(a["source"][first], d.source[rid])


def test_running_other_tiers_first_on_the_same_plan_changes_nothing():
    """A plan is shared by the tiers of a run: running one must not alter it."""
    loaded = load(None, SHORT)
    shared = build_plan(loaded)
    before = whole_demand(shared)
    for name in ("Streams", "All 3 APIs"):
        TierRun(shared, find_tier(name)).run()
    after = whole_demand(shared)
    for col in DEMAND_COLUMNS:
        np.testing.assert_array_equal(getattr(before, col), getattr(after, col), err_msg=col)
    after_others = TierRun(shared, find_tier("RPC")).run()
    alone = run_tier(loaded, "RPC")
    assert same_columns(after_others.attempts, alone.attempts) == []


def test_parallel_tiers_give_the_same_attempts_as_sequential():
    loaded = load(None, [*SHORT, 'tiers=["RPC", "Search"]'])
    sequential = runner.run(loaded, jobs=1)
    parallel = runner.run(loaded, jobs=2)
    assert sequential.attempts.equals(parallel.attempts)
    assert sequential.windows.equals(parallel.windows)
    assert sequential.summary == parallel.summary
