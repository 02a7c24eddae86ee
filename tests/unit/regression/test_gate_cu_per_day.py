"""The gate sees a change in CU that moves no rate and no peak (issue 32: "+6.25 % calls
and CU per hour passed `capsim check`").

A constant 16 svc_call/s (20 CU each) for 120 s: 38,400 CU, i.e. 27,648,000 CU per day
exactly. At 17/s (+6.25 %) every call still fits the Advanced bundle's window (4,080 CU of
100,000 per 12 s), nothing is throttled and the peak window moves by 6.25 %, inside its
10 % tolerance: only the figures that follow the bill catch it -- CU per day (2 %), the
hours the daily allowance lasts at this rate (2 %, down by 16/17) and svc_call's CU per
day (5 %).
"""

from __future__ import annotations

import pytest
from gate_cli import cli, saved_gate
from scenarios import scenario_text


def text(rate: int) -> str:
    return scenario_text(name="gate", top="seed = 3\n", duration=120,
                         tiers=["Advanced bundle"],
                         tables="[slo]\nallowance_must_last_day = false\n",
                         sources='[[sources]]\nname = "s"\nkey = "k"\n'
                         f'arrival = {{ process = "constant", rate = {rate} }}\n'
                         'mix = { svc_call = 1.0 }\n')


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    return saved_gate(tmp_path_factory.mktemp("gate"), text(16))


def test_the_baseline_holds_cu_per_day_as_the_closed_form(gate):
    import json

    metrics = json.loads((gate / "gate.json").read_text())["tiers"][0]["metrics"]
    assert metrics["cu_per_day"]["mean"] == pytest.approx(16 * 20 * 86_400, rel=1e-3)


def test_six_percent_more_calls_fail_the_gate_on_cu_per_day_alone(gate):
    (gate / "gate.toml").write_text(text(17))
    r = cli("check", gate / "gate.toml", "--baseline", gate / "gate.json")
    assert r.exit_code == 1, r.output
    regressions = [line.split(": ", 2)[2] for line in r.output.splitlines()
                   if "regression:" in line]
    labels = sorted(line.split(":")[0] for line in regressions)
    assert labels == ["CU charged per day", "CU per day", "daily allowance lasts at this "
                      "rate (h)"], r.output
    per_day = next(line for line in regressions if line.startswith("CU charged"))
    assert "+6.2" in per_day  # 17 / 16 - 1 = 6.25 %
    assert "svc_call" in next(line for line in regressions if line.startswith("CU per day"))
    lasts = next(line for line in regressions if line.startswith("daily allowance"))
    assert "-5.9%" in lasts  # 16 / 17 - 1 = -5.88 %
