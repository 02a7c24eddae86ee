"""``sim.run(..., replications=N)``: the sweeps' seeds, replication 0 as the plain run,
determinism, and intervals equal to those of independent plain runs."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from scipy.stats import t as student_t

import sim
from sim.core.errors import CapsimError
from sim.core.rng import replication_seed
from sim.jobs.sweep_plan import plan_sweep
from sim.runner.replications import MAX_REPLICATIONS

TIERS = ["RPC", "All 3 APIs", "Advanced bundle"]
SHORT = ["duration=60"]


def _run(**kw):
    return sim.run(None, tiers=TIERS, overrides=SHORT, records="none", **kw)


@pytest.fixture(scope="module")
def three():
    return _run(replications=3)


def test_one_replication_is_the_plain_run():
    plain, one = _run(), _run(replications=1)
    assert one.summary.replications is None
    assert one.summary.to_json() == plain.summary.to_json()
    assert "replications" not in json.loads(plain.summary.to_json())


def test_replication_zero_is_the_plain_run_and_the_rest_are_the_sweeps_seeds(three):
    plain = _run()
    rep = three.summary.replications
    # Everything but the new section is the plain run's.
    assert three.summary.model_copy(update={"replications": None}).to_json() == \
        plain.summary.to_json()
    seed = plain.summary.seed
    sweep = plan_sweep(None, replications=3, tiers=TIERS, overrides=SHORT)
    assert [r.seed for r in rep.runs] == [str(s.seed) for s in sweep.runs]
    assert [r.seed for r in rep.runs] == [str(replication_seed(seed, r)) for r in range(3)]


def test_intervals_are_those_of_independent_plain_runs(three):
    rep = three.summary.replications
    seed = three.summary.seed
    plain = [_run(seed=replication_seed(seed, r)).summary for r in range(3)]
    for i, name in enumerate(TIERS):
        tier = rep.tier(name)
        values = [s.tiers[i].throttle_rate for s in plain]
        assert tier.throttle_rate.mean == pytest.approx(statistics.fmean(values), abs=1e-12)
        assert tier.throttle_rate.half_width == pytest.approx(
            student_t.ppf(0.975, 2) * statistics.stdev(values) / math.sqrt(3), abs=1e-12)
        cu = [s.tiers[i].cu.settled for s in plain]
        assert tier.cu_settled.mean == pytest.approx(statistics.fmean(cu))
        assert tier.slo_met.count == sum(s.tiers[i].meets_slo for s in plain)
    assert [r.recommended for r in rep.runs] == [s.recommended.tier for s in plain]
    assert rep.recommendation_held.count == sum(
        s.recommended.tier == plain[0].recommended.tier for s in plain)


def test_same_seed_same_bytes(three):
    assert _run(replications=3).summary.to_json() == three.summary.to_json()


@pytest.mark.parametrize("n", [0, -1, MAX_REPLICATIONS + 1, 2.5, "3", True])
def test_a_bad_number_of_replications_is_a_user_error(n):
    with pytest.raises(CapsimError, match="--replications.*1 to 100,"):
        _run(replications=n)


def test_replications_run_on_the_engine_the_run_chose(monkeypatch):
    # Each replication runs on the engine replication 0 ran on, and both engines give the
    # same rows: the replications sections are equal (the engine key aside).
    import sim.runner.replications as reps

    asked: list[str] = []
    real = reps.tier_run_class

    def spy(engine: str):
        asked.append(engine)
        return real(engine)

    monkeypatch.setattr(reps, "tier_run_class", spy)
    runs = {}
    for engine in ("simpy", "compiled"):
        asked.clear()
        runs[engine] = _run(replications=2, engine=engine)
        assert asked == [engine] * len(TIERS)
    simpy, compiled = (json.loads(runs[e].summary.to_json()) for e in ("simpy", "compiled"))
    assert compiled.pop("engine") == "compiled" and "engine" not in simpy
    assert simpy["replications"] == compiled["replications"]
    assert simpy == compiled
