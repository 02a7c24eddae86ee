"""Sweep expansion (sim/jobs/sweep_plan.py): factorial points, variants, replications."""

from __future__ import annotations

import json

import pytest
from scenarios import scenario_text
from sweep_fixtures import write_scenario

import sim
from sim.core.rng import replication_seed
from sim.jobs.run_one import simulate
from sim.jobs.sweep_plan import BASE, parse_vary, plan_sweep, split_values, toml_text


def test_factorial_expansion_is_the_full_product(tmp_path):
    path = write_scenario(tmp_path)
    plan = plan_sweep(path, vary=["load=0.5,1,2", "sources[0].arrival.rate=3,9"],
                      replications=2, variants=False)
    assert len(plan.points) == 3 * 2
    assert plan.points == (
        {"load": 0.5, "sources[0].arrival.rate": 3}, {"load": 0.5, "sources[0].arrival.rate": 9},
        {"load": 1, "sources[0].arrival.rate": 3}, {"load": 1, "sources[0].arrival.rate": 9},
        {"load": 2, "sources[0].arrival.rate": 3}, {"load": 2, "sources[0].arrival.rate": 9})
    assert len(plan.runs) == 6 * 2
    assert len({r.run_id for r in plan.runs}) == len(plan.runs)
    run = plan.runs[7]  # point 3 (load 1, rate 9), replication 1
    assert (run.point, run.variant, run.replication) == (3, BASE, 1)
    assert run.overrides == ("load=1", "sources[0].arrival.rate=9")
    assert plan.tiers == ("Small", "Big")


def test_variants_run_beside_the_base_at_every_point(tmp_path):
    path = write_scenario(tmp_path)
    plan = plan_sweep(path, vary=["load=1,2"], replications=3)
    assert plan.variants == (BASE, "no retries", "double traffic")
    assert len(plan.runs) == 2 * 3 * 3
    no_retry = [r for r in plan.runs if r.variant == "no retries" and r.point == 1]
    assert [r.replication for r in no_retry] == [0, 1, 2]
    assert no_retry[0].overrides == ("load=2", 'clients.default.retry.policy="none"')
    # The variant's runs share the base's seeds: paired comparisons (common random numbers).
    base = [r for r in plan.runs if r.variant == BASE and r.point == 1]
    assert [r.seed for r in no_retry] == [r.seed for r in base]


def test_replication_seeds_derive_from_the_scenario_seed(tmp_path):
    plan = plan_sweep(write_scenario(tmp_path), replications=3, variants=False)
    assert [r.seed for r in plan.runs] == [3, replication_seed(3, 1), replication_seed(3, 2)]
    assert len({r.seed for r in plan.runs}) == 3


def test_replication_zero_of_the_base_is_capsim_run(tmp_path):
    path = write_scenario(tmp_path)
    plan = plan_sweep(path, vary=["load=1.5"], replications=2, overrides=["duration=60"])
    direct = sim.run(path, overrides=["duration=60", "load=1.5"]).summary.to_json()
    assert simulate(plan.runs[0]) == direct
    assert simulate(plan.runs[1]) != direct


def test_values_split_on_top_level_commas_only():
    assert split_values('1, 2.5,"a,b",[1,2],{x = 1, y = 2}') == \
        ["1", "2.5", '"a,b"', "[1,2]", "{x = 1, y = 2}"]
    f = parse_vary('clients.default.retry.policy="none",exponential')
    assert f.values == ("none", "exponential")


@pytest.mark.parametrize("value", [1, 2.5, True, "x\"y", [1, "a"], {"a": 1, "b": [2.0]}])
def test_variant_values_round_trip_through_toml(value):
    import tomllib

    assert tomllib.loads(f"v = {toml_text(value)}")["v"] == value


@pytest.mark.parametrize(("vary", "match"), [
    (["load"], "KEY.PATH=V1,V2"),
    (["load=1,,2"], "no empty value"),
    (["load=1,1"], "distinct"),
    (["load=1", "load=2"], "varied once"),
    (["load=0"], "load"),
    (["nosuchkey=1"], "unknown key"),
])
def test_bad_vary_is_a_clear_error_before_anything_runs(tmp_path, vary, match):
    with pytest.raises(sim.CapsimError, match=match):
        plan_sweep(write_scenario(tmp_path), vary=vary)


def test_fingerprint_changes_with_what_the_sweep_is(tmp_path):
    path = write_scenario(tmp_path)
    a = plan_sweep(path, vary=["load=1,2"])
    assert a.fingerprint == plan_sweep(path, vary=["load=1,2"]).fingerprint
    others = [plan_sweep(path, vary=["load=1,3"]), plan_sweep(path, vary=["load=1,2"],
              replications=2), plan_sweep(path, vary=["load=1,2"], tiers=["Big"]),
              plan_sweep(path, vary=["load=1,2"], overrides=["duration=60"]),
              plan_sweep(path, vary=["load=1,2"], variants=False)]
    assert len({a.fingerprint, *(o.fingerprint for o in others)}) == 6
    json.dumps(a.identity)  # plain JSON


def test_bad_variant_in_the_scenario_is_refused(tmp_path):
    text = scenario_text(name="v", duration=None, tiers=None,
                         tables='[[variants]]\nname = "base"\nset = { load = 2 }\n')
    with pytest.raises(sim.CapsimError, match="variants"):
        plan_sweep(write_scenario(tmp_path, text))
