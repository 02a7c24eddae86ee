"""The advisor's cache change against a closed form.

A constant 6 svc_call a second at c CU each charges 6 c 86,400 CU a day, more than
the RPC tier's daily allowance A (sim/data/pricing.toml); the window is never short
(6 c 12 < 4,000). The SLO asks the allowance to last a day, so RPC meets iff the calls
sent charge at most A a day: the least share to cache is 1 - A / (6 c 86,400), up to
the binomial noise of the thinning (about 2 % of it here) and the search's tolerance.
"""

from __future__ import annotations

import pytest
from scenarios import write_scenario

import sim
from sim.advisor.result import FOUND
from sim.config.pricing import default_pricing_table

PRICES = default_pricing_table()
COST = PRICES["rpc"]["method_cu"]["svc_call"]
ALLOWANCE = PRICES["tiers"]["RPC"]["daily_allowance_cu"]
RATE = 6

SOURCE = f"""[[sources]]
name = "app"
key = "k"
arrival = {{ process = "constant", rate = {RATE} }}
mix = {{ svc_call = 1.0 }}
"""


@pytest.fixture(scope="module")
def advice(tmp_path_factory):
    path = write_scenario(tmp_path_factory.mktemp("cache"), name="cached", duration=1200,
                          tiers=["RPC", "Professional bundle"], sources=SOURCE)
    return sim.advise(path, replications=2)


def test_the_share_cached_is_the_closed_form(advice):
    (rpc,) = advice.tiers
    assert rpc.status == FOUND, rpc.describe()
    needed = 1 - ALLOWANCE / (RATE * COST * 86400)
    share = rpc.cost.dropped_share
    assert abs(share / needed - 1) <= 0.08
    assert "cache" in rpc.snippet and "svc_call" in rpc.snippet
    assert rpc.cost.cu_per_day <= ALLOWANCE * 1.001


def test_pacing_is_not_tried_where_only_fewer_calls_help(advice):
    (rpc,) = advice.tiers
    assert rpc.pacing_cu_per_s is None and rpc.tried == 1
