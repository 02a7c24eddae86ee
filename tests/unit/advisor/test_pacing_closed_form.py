"""``capsim advise`` (sim/advisor/) against a closed form.

One source of ``svc_call`` at a steady Poisson rate with bursts (spikes) far above a
window's budget, exponential retries, every tier of the run in the spec's catalogue.
The SLO tolerates no throttle at all and long delays (a paced request waits, it is not
refused). A token bucket of rate r CU/s and burst b lets at most 12 r + b CU into an
epoch-aligned 12-second window, so the RPC tier (L = 4,000 CU per window) meets iff
12 r + b <= L up to one call's cost: the highest pacing rate that meets is
(L - b) / 12 within a call, i.e. L / 12 s / c calls a second within a few per cent. The
dollars saved are the two catalogue prices' difference (sim/data/pricing.toml).
"""

from __future__ import annotations

import pytest
from scenarios import write_scenario

import sim
from sim.advisor.result import FOUND
from sim.config.pricing import default_pricing_table
from sim.config.tiers import find_tier

PRICES = default_pricing_table()
COST = PRICES["rpc"]["method_cu"]["svc_call"]
BUDGET = find_tier("RPC").cu_per_window

SOURCE = """
[clients.app]
retry = { policy = "exponential", max_attempts = 4, base_s = 0.5, cap_s = 8 }

[slo]
max_throttle_rate = 0.0
max_failure_rate = 0.001
p99_latency_ms = 120000
allowance_must_last_day = false
"""

SPIKES = """[[sources]]
name = "app"
key = "k"
client = "app"
mix = { svc_call = 1.0 }
[sources.arrival]
process = "spikes"
base_rate = 8
spike_rate = 40
at_s = [60, 300, 540]
spike_duration_s = 10
"""


@pytest.fixture(scope="module")
def advice(tmp_path_factory):
    path = write_scenario(tmp_path_factory.mktemp("advise"), name="paced", duration=720,
                          tiers=["RPC", "Professional bundle"], tables=SOURCE,
                          sources=SPIKES)
    return sim.advise(path, replications=2)


def test_the_pacing_found_for_the_rpc_tier_is_the_closed_form(advice):
    assert advice.recommended == "Professional bundle"
    (rpc,) = advice.tiers
    assert rpc.tier == "RPC" and rpc.status == FOUND
    calls_per_s = rpc.pacing_cu_per_s / COST
    closed_form = BUDGET / 12 / COST
    assert abs(calls_per_s / closed_form - 1) <= 0.05


def test_the_dollars_saved_are_the_catalogue_prices_difference(advice):
    (rpc,) = advice.tiers
    tiers = PRICES["tiers"]
    assert rpc.saved_usd_per_month == (tiers["Professional bundle"]["monthly_usd"]
                                       - tiers["RPC"]["monthly_usd"])


def test_the_snippet_is_the_pacing_to_paste(advice):
    (rpc,) = advice.tiers
    import tomllib

    pasted = tomllib.loads(rpc.snippet)
    assert pasted["clients"]["app"]["pacing"]["rate_cu_per_s"] == rpc.pacing_cu_per_s
    assert rpc.cost.cu_per_day > 0 and rpc.cost.added_p99_ms > 0  # paced requests wait
    assert 0 < rpc.cost.delayed_share < 1 and rpc.cost.mean_delay_ms > 0


def test_retry_after_is_skipped_on_json_rpc_traffic(advice):
    reasons = dict(advice.skipped_changes)
    assert "-32005 carries no Retry-After" in reasons["honour Retry-After in client 'app'"]
