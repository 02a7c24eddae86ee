"""The ``replications`` section from hand-made replications: shares, intervals, verdicts."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

import sim
from sim.metrics.replications import replications_summary

Z = NormalDist().inv_cdf(0.975)
T_975_9 = 2.2622  # Student t, 9 degrees of freedom, from any t table


@pytest.fixture(scope="module")
def template():
    """Two real tier entries to edit: RPC ($49/month) and Advanced bundle ($999)."""
    out = sim.run(None, tiers=["RPC", "Advanced bundle"], overrides=["duration=30"],
                  records="none")
    return out.summary.tiers


def _tier(t, *, meets: bool, throttle: float, p99: float | None = 100.0):
    return t.model_copy(update={
        "meets_slo": meets, "throttle_rate": throttle,
        "latency_ms": t.latency_ms.model_copy(update={"p99": p99})})


def _replications(template, cheap_meets: list[bool]):
    cheap, dear = template
    return [[_tier(cheap, meets=m, throttle=r / 100, p99=None if r == 5 else 100.0 + r),
             _tier(dear, meets=True, throttle=0.0, p99=50.0)]
            for r, m in enumerate(cheap_meets)]


def test_the_cheap_tier_failing_once_in_ten(template):
    meets = [r != 3 for r in range(10)]
    rep = replications_summary(_replications(template, meets), list(range(100, 110)))
    assert rep.n == 10 and rep.proportion_interval == "wilson"
    assert rep.recommended == "RPC"  # replication 0's
    assert [r.recommended for r in rep.runs] == ["RPC"] * 3 + ["Advanced bundle"] + ["RPC"] * 6
    assert [r.seed for r in rep.runs] == [str(s) for s in range(100, 110)]
    held = rep.recommendation_held
    assert (held.count, held.n, held.share) == (9, 10, 0.9)
    # Wilson for 9 of 10, written out.
    centre = (0.9 + Z * Z / 20) / (1 + Z * Z / 10)
    half = Z / (1 + Z * Z / 10) * math.sqrt(0.9 * 0.1 / 10 + Z * Z / 400)
    assert held.low == pytest.approx(centre - half, abs=1e-9)
    assert held.high == pytest.approx(centre + half, abs=1e-9)
    assert rep.recommended_met_slo.count == 9
    # Pooled: only the bundle met the SLO in every replication.
    assert rep.meeting_slo_in_every_replication == "Advanced bundle"
    rpc, bundle = rep.tiers
    assert (rpc.slo_met.count, bundle.slo_met.count) == (9, 10)
    assert bundle.slo_met.low == pytest.approx(10 / (10 + Z * Z), abs=1e-9)
    # Throttle rates 0.00 .. 0.09: mean 0.045, sample sd sqrt(110/12) / 100.
    sd = math.sqrt(sum((r - 4.5) ** 2 for r in range(10)) / 9) / 100
    assert rpc.throttle_rate.mean == pytest.approx(0.045)
    assert rpc.throttle_rate.half_width == pytest.approx(T_975_9 * sd / math.sqrt(10), rel=1e-4)
    # p99 undefined in replication 5: the other nine count.
    assert rpc.p99_latency_ms.n == 9
    assert rpc.p99_latency_ms.mean == pytest.approx(100 + (45 - 5) / 9)
    assert bundle.throttle_rate.half_width == 0.0


def test_replication_zero_without_the_cheap_tier(template):
    meets = [False, True, False, False]
    rep = replications_summary(_replications(template, meets), [1, 2, 3, 4])
    assert rep.recommended == "Advanced bundle"
    assert rep.recommendation_held.count == 3
    assert rep.recommended_met_slo.count == 4


def test_no_tier_in_replication_zero(template):
    cheap, dear = template
    runs = [[_tier(cheap, meets=False, throttle=0.5), _tier(dear, meets=r > 0, throttle=0.0)]
            for r in range(3)]
    rep = replications_summary(runs, [7, 8, 9])
    assert rep.recommended is None and rep.recommended_met_slo is None
    assert rep.recommendation_held.count == 1  # replication 0 itself: no tier
    assert rep.meeting_slo_in_every_replication is None


def test_one_replication_or_mismatched_tiers_are_refused(template):
    with pytest.raises(ValueError):
        replications_summary([list(template)], [1])
    with pytest.raises(ValueError):
        replications_summary([list(template), list(template)[::-1]], [1, 2])
