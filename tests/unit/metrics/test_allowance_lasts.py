"""How long the daily allowance lasts at a short run's rate (issue 21, item 13).

A run shorter than a day used to compare its few hours of CU with a *daily* allowance
("ran out at –" for every tier). At a constant rate of r requests per second of a method
costing c CU, the allowance A lasts A / (r c 3600) hours: the closed form below."""

from __future__ import annotations

import pytest
from scenarios import write_scenario

import sim
from sim.config.pricing import default_pricing_table
from sim.report.markdown import render

CU = default_pricing_table()["rpc"]["method_cu"]["svc_call"]
RATE = 2.0  # svc_call per second, constant


def _run(tmp_path, *, hours: float, duration: float = 600, rate: float = RATE,
         slo: str = ""):
    allowance = hours * rate * CU * 3600
    tables = (f'[[custom_tiers]]\nname = "Metered"\napis = ["rpc"]\n'
              f"cu_per_window = 100000\ndaily_allowance_cu = {allowance!r}\n" + slo)
    source = ('[[sources]]\nname = "s"\nkey = "k"\nmix = { svc_call = 1.0 }\n'
              f'arrival = {{ process = "constant", rate = {rate}, phase = 0.25 }}\n')
    path = write_scenario(tmp_path, duration=duration, tiers=["Metered"], tables=tables,
                          sources=source)
    return sim.run(path, records="none").summary


@pytest.mark.parametrize("hours", [6.0, 23.5, 30.0])
def test_lasts_h_is_the_allowance_over_the_hourly_charge(tmp_path, hours):
    """Item 13: lasts_h = A / (r c 3600); a tier whose allowance lasts under 24 h fails
    the SLO (and says why), one that lasts longer meets it."""
    s = _run(tmp_path, hours=hours)
    t = s.tier("Metered")
    assert t.requests == RATE * 600  # constant arrivals at 0.25 + k/2 s
    assert t.daily_allowance.lasts_h == pytest.approx(hours, rel=1e-6)
    assert t.daily_allowance.ran_out_at is None
    assert t.meets_slo == (hours >= 24)
    if hours < 24:
        assert any("daily allowance lasts" in v for v in t.slo_violations)
        assert s.recommended.tier is None
    report = render(s, [])
    assert f"{hours:,.1f} h" in report


def test_the_scenario_can_turn_the_rule_off(tmp_path):
    """Item 13: ``[slo] allowance_must_last_day = false`` keeps lasts_h but not the rule."""
    s = _run(tmp_path, hours=6.0, slo="[slo]\nallowance_must_last_day = false\n")
    t = s.tier("Metered")
    assert t.daily_allowance.lasts_h == pytest.approx(6.0, rel=1e-6)
    assert t.meets_slo and s.slo.allowance_must_last_day is False


def test_a_run_of_a_day_or_more_has_no_lasts_h(tmp_path):
    """Item 13: a run of a whole day saw the allowance over a day (ran_out_at says)."""
    s = _run(tmp_path, hours=6.0, duration=86400, rate=0.01)
    t = s.tier("Metered")
    assert t.daily_allowance.lasts_h is None
    assert t.daily_allowance.ran_out_at is not None  # 6 h of the rate: it ran out
    assert not any("lasts" in v for v in t.slo_violations)
