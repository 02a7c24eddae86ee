"""The verdict of ``capsim run --robust`` (:mod:`sim.jobs.robust`, :mod:`sim.report.how_sure`).

"Robust" must mean: every price the traffic pays was varied, and no variation changed
the recommendation. Each case below is built by hand and its verdict follows from that
definition alone.
"""

from __future__ import annotations

import pytest

from sim.jobs.robust import Robustness, split_prices
from sim.report.how_sure import verdict_line
from sim.results.summary import PriceSensitivity, Recommendation


def row(price: str, at_low: str | None, at_high: str | None, estimate: str = "A"
        ) -> PriceSensitivity:
    return PriceSensitivity(price=price, estimate=10.0, low=5.0, high=20.0, source="default",
                            at_low=at_low, at_high=at_high,
                            flips=not (at_low == at_high == estimate))


@pytest.mark.parametrize("at_low, at_high, rows, not_varied, robust", [
    ("A", "A", [row("p", "A", "A")], (), True),                # nothing changes it
    ("A", "A", [], (), True),                                  # nothing to vary at all
    ("A", "A", [row("p", "A", "A")], ("q",), False),           # a used price not varied
    ("B", "A", [row("p", "B", "A")], (), False),               # flips at a corner and alone
    ("A", None, [row("p", "A", "A")], (), False),              # no tier at the most costly
    ("A", "A", [row("p", "B", "A")], (), False),               # alone, not at the corners
])
def test_robust_only_when_every_used_price_varied_and_nothing_flips(at_low, at_high, rows,
                                                                    not_varied, robust):
    rob = Robustness({}, "A", at_low, at_high, tuple(rows), not_varied=not_varied)
    assert rob.robust is robust


def test_prices_split_into_varied_not_varied_unbilled_and_not_used():
    known = {"rpc.default_method_cu": 10.0, "rpc.method_cu.svc_call": 20.0,
             "rpc.method_cu.svc_pendingBlock": 0.0, "sizing.item_base_cu": 10.0,
             "tiers.RPC.daily_allowance_cu": 7.2e6, "tiers.RPC.monthly_usd": 49.0,
             "tiers.Search.monthly_usd": 99.0}
    ranges = {"rpc.default_method_cu": (5.0, 20.0, "default"),
              "sizing.item_base_cu": (5.0, 20.0, "default"),
              "tiers.RPC.daily_allowance_cu": (3.6e6, 1.44e7, "default"),
              "tiers.Search.monthly_usd": (80.0, 120.0, "scenario")}
    used = {"rpc.default_method_cu", "rpc.method_cu.svc_call",
            "rpc.method_cu.svc_pendingBlock", "tiers.RPC.daily_allowance_cu",
            "tiers.RPC.monthly_usd"}
    varied, not_varied, unbilled, not_used = split_prices(used, ranges, known)
    assert set(varied) == {"rpc.default_method_cu", "tiers.RPC.daily_allowance_cu"}
    assert not_varied == ("rpc.method_cu.svc_call",)     # paid, no range (set by scenario)
    assert unbilled == ("rpc.method_cu.svc_pendingBlock",)
    # never paid: listed, not simulated; the ranged monthly price of a tier not ranked too;
    # an unranged monthly price is neither a gap nor unused
    assert not_used == ("sizing.item_base_cu", "tiers.Search.monthly_usd")


def rec(**kw) -> Recommendation:
    base = {"tier": "A", "reason": "r", "robust": False, "at_low_prices": "A",
            "at_high_prices": "A", "sensitivity": (), "used_not_varied": (),
            "used_unbilled": (), "not_used": ()}
    return Recommendation(**{**base, **kw})


def test_verdict_line_says_why():
    assert verdict_line(rec(robust=True)).startswith("robust")
    line = verdict_line(rec(used_not_varied=("rpc.method_cu.svc_call",)))
    assert line.startswith("NOT robust") and "not varied: rpc.method_cu.svc_call" in line
    line = verdict_line(rec(sensitivity=(row("tiers.RPC.daily_allowance_cu", "B", "A"),)))
    assert "flips with tiers.RPC.daily_allowance_cu" in line
    assert "at their range ends together" in verdict_line(rec(at_high_prices=None))


def test_how_sure_lists_unused_prices_and_never_calls_them_evidence():
    from sim.report.how_sure import how_sure
    from sim.results.summary import (
        Assumptions,
        PricingAssumption,
        RunSummary,
        SloSummary,
    )

    summary = RunSummary(
        capsim_version="0", scenario="s", description="", scenario_file="f", seed=1,
        start="2026-01-01T00:00:00Z", duration_s=60.0, limiter={},
        slo=SloSummary(max_throttle_rate=0.01, max_failure_rate=0.001, p99_latency_ms=2000),
        recommended=rec(robust=False, used_not_varied=("rpc.method_cu.svc_call",),
                        not_used=("websocket.connect_cu",),
                        sensitivity=(row("rpc.default_method_cu", "A", "A"),)),
        tiers=(), notes=(),
        assumptions=Assumptions(model=(), pricing=(
            PricingAssumption(name="rpc.method_cu.svc_call", value=25.0, source="scenario"),
            PricingAssumption(name="websocket.connect_cu", value=50.0,
                              source="default assumption"))))
    text = "\n".join(how_sure(summary))
    assert "**not robust**" in text and "`rpc.method_cu.svc_call`" in text
    assert "| `websocket.connect_cu` | 50 | – | not used by this traffic |" in text
    assert "| `rpc.method_cu.svc_call` | 25 | – | **not varied** (no range) |" in text
    assert "daily allowance at its high end" in text


def test_an_allowance_alone_reruns_only_the_runs_it_reaches(tmp_path):
    """A tier's allowance is charged only by the accounts on that tier: alone it reaches
    the run of that tier, or every run when an account keeps that tier fixed."""
    from scenarios import write_scenario

    from sim.config.resolved import load
    from sim.jobs.robust import _tiers_reached

    one = load(write_scenario(tmp_path, filename="one.toml", tiers=["RPC", "Search"]))
    assert _tiers_reached(one, ["tiers.RPC.daily_allowance_cu"]) == {"RPC"}
    assert _tiers_reached(one, ["tiers.Advanced bundle.daily_allowance_cu"]) == set()
    assert _tiers_reached(one, ["rpc.method_cu.svc_call"]) == {"RPC", "Search"}
    text = ('name = "two"\nduration = 60\ntiers = ["RPC", "Search"]\n'
            '[[accounts]]\nname = "a"\nkeys = ["ka"]\n'
            '[[accounts]]\nname = "b"\nkeys = ["kb"]\ntier = "Streams"\n'
            '[[sources]]\nname = "s"\nkey = "ka"\n'
            'arrival = { process = "poisson", rate = 1 }\n')
    two = load(write_scenario(tmp_path, text, filename="two.toml"))
    assert _tiers_reached(two, ["tiers.Streams.daily_allowance_cu"]) == {"RPC", "Search"}
    assert _tiers_reached(two, ["tiers.Search.daily_allowance_cu"]) == {"Search"}
