"""Sweeps report CU per day, the allowance's days and the cheapest tier's price, and
name a variant that is the base by construction.

A constant 6 svc_call a second at c CU each, 600 s, tiers RPC and Professional bundle:
the base charges 6 c 86,400 CU a day exactly (no request fails on the bundle), so its
allowance A lasts A / (6 c 86,400) days; the RPC tier's smaller allowance does not
last a day, so the bundle is the cheapest meeting tier. Caching 40 % of the calls
brings the charge under RPC's allowance: the cheapest tier's price falls by the two
catalogue prices' difference in every replication. Retry-After against exponential
backoff on JSON-RPC calls is identical by construction, and the simulation agrees:
its rows equal the base's.
"""

from __future__ import annotations

import pytest
from scenarios import write_scenario

from sim.api import load_scenario
from sim.config.pricing import default_pricing_table
from sim.jobs.identical import NO_HEADER, SAME_VALUES, UNUSED_CLIENT, identical_reason
from sim.jobs.sweep import run_sweep
from sim.jobs.sweep_plan import plan_sweep

PRICES = default_pricing_table()
COST = PRICES["rpc"]["method_cu"]["svc_call"]
TIERS = PRICES["tiers"]

TABLES = """[clients.app]
retry = { policy = "retry-after", max_attempts = 4, base_s = 0.5, cap_s = 8 }
[clients.spare]
retry = { policy = "none" }
"""
SOURCE = """[[sources]]
name = "app"
key = "k"
client = "app"
arrival = { process = "constant", rate = 6 }
mix = { svc_call = 1.0 }
"""
VARIANTS = """
[[variants]]
name = "exponential"
set = { "clients.app.retry.policy" = "exponential" }
[[variants]]
name = "cache"
set = { "sources[0].cache" = { svc_call = 0.4 } }
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    path = write_scenario(folder, name="cu", duration=600,
                          tiers=["RPC", "Professional bundle"], tables=TABLES,
                          sources=SOURCE + VARIANTS)
    return run_sweep(plan_sweep(path, replications=2), folder / "out")


def test_cu_per_day_and_allowance_days_of_the_base(swept):
    base = next(p for p in swept.document.points if p.variant == "base")
    bundle = next(t for t in base.tiers if t.tier == "Professional bundle")
    per_day = 6 * COST * 86400
    assert bundle.cu_per_day.mean == pytest.approx(per_day, rel=1e-9)
    assert bundle.allowance_days.mean == pytest.approx(
        TIERS["Professional bundle"]["daily_allowance_cu"] / per_day, rel=1e-9)
    assert base.cheapest_meeting_slo == "Professional bundle"
    assert base.cheapest_monthly_usd == TIERS["Professional bundle"]["monthly_usd"]


def test_the_cheapest_price_difference_of_a_variant(swept):
    (cache,) = [c for c in swept.document.cheapest_differences if c.variant == "cache"]
    assert cache.tier == "RPC" and cache.base_tier == "Professional bundle"
    assert cache.difference_usd.mean == (TIERS["RPC"]["monthly_usd"]
                                         - TIERS["Professional bundle"]["monthly_usd"])
    assert cache.difference_usd.half_width == 0.0 and cache.difference_usd.n == 2


def test_retry_after_against_exponential_on_json_rpc_is_identical_by_construction(swept):
    assert swept.document.identical_by_construction == {"exponential": NO_HEADER}
    p = swept.points
    cols = [c for c in p.columns if c != "variant"]
    a = p[p["variant"] == "base"][cols].reset_index(drop=True)
    b = p[p["variant"] == "exponential"][cols].reset_index(drop=True)
    assert a.equals(b)
    text = (swept.folder / "report.md").read_text(encoding="utf-8")
    assert "exponential: identical to the base by construction" in text
    assert "CU/day" in text and "allowance days" in text


@pytest.mark.parametrize("change, mix, reason", [
    ("clients.app.retry.policy=\"exponential\"", "svc_call = 1.0", NO_HEADER),
    ("clients.app.retry.policy=\"exponential\"", '"POST /v1/size" = 0.5, svc_call = 0.5',
     None),
    ("clients.app.retry.max_attempts=4", "svc_call = 1.0", SAME_VALUES),
    ("clients.spare.retry.max_attempts=2", "svc_call = 1.0", UNUSED_CLIENT),
    ("clients.app.retry.max_attempts=2", "svc_call = 1.0", None),
])
def test_identical_reason(tmp_path, change, mix, reason):
    path = write_scenario(tmp_path, name="i", duration=60, tables=TABLES,
                          sources=SOURCE.replace("svc_call = 1.0", mix))
    assert identical_reason(load_scenario(path),
                            load_scenario(path, overrides=[change])) == reason
