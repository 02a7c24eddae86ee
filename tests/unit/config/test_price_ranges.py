"""``[price_ranges]`` in a scenario: dotted pricing keys to [low, high], checked with a
user error naming the file, line and key (exit 2, no traceback); and the prices they
range over, which are never negative."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from scenarios import write_scenario

from sim.cli.main import main


@pytest.mark.parametrize("ranges, expected", [
    ('"rpc.method_cu.nope" = [1, 2]\n', "unknown price 'rpc.method_cu.nope'"),
    ('"rpc.method_cu.svc_call" = [3, 2]\n', "expected 0 <= low <= high"),
    ('"rpc.method_cu.svc_call" = [1]\n', "expected [low, high], two numbers"),
    ('"tiers.Nope.monthly_usd" = [1, 2]\n', "unknown price 'tiers.Nope.monthly_usd'"),
    ('"tiers.RPC.daily_allowance" = [1, 2]\n', "unknown price"),
    # the shipped svc_call is 20 CU: a range is around the price's value, and a typo's
    # magnitude (1e300 for 30) is refused past 1000 times it
    ('"rpc.method_cu.svc_call" = [21, 40]\n', "expected a range around the price's value 20"),
    ('"rpc.method_cu.svc_call" = [5, 19.5]\n', "expected a range around the price's value 20"),
    ('"rpc.method_cu.svc_call" = [10, 1e300]\n', "expected high at most 20000"),
    ('"rpc.method_cu.svc_call" = [10, 20001]\n', "expected high at most 20000"),
    # unbilled (0 CU): at most a million CU
    ('"rpc.method_cu.svc_pendingBlock" = [0, 2e6]\n', "expected high at most 1e+06"),
])
def test_bad_price_ranges_are_user_errors(tmp_path, ranges, expected):
    path = write_scenario(tmp_path, top="", tables="[price_ranges]\n" + ranges)
    result = CliRunner().invoke(main, ["run", str(path), "-q", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert expected in result.output and "price_ranges" in result.output
    assert "Traceback" not in result.output




# -- which end is the least costly, default ranges, setting a price -------------------------

def test_a_larger_allowance_is_the_less_costly_end():
    """Every price is a cost (its low end is the least costly) but the daily allowance:
    more allowance is more room, so its high end is the least costly."""
    from sim.config.price_ranges import costly_ends

    assert costly_ends("rpc.default_method_cu", 5.0, 20.0) == (5.0, 20.0)
    assert costly_ends("tiers.RPC.monthly_usd", 40.0, 60.0) == (40.0, 60.0)
    assert costly_ends("tiers.RPC.daily_allowance_cu", 1e6, 4e6) == (4e6, 1e6)
    assert costly_ends("tiers.Streams + RPC.daily_allowance_cu", 1.0, 2.0) == (2.0, 1.0)


def test_default_ranges_cover_every_shipped_assumption_but_money_and_zero():
    from sim.config.price_ranges import DEFAULT_FACTORS, default_ranges
    from sim.config.pricing import Pricing, default_pricing_table

    table = default_pricing_table()
    ranges = default_ranges(Pricing.model_validate(table), {"rpc.method_cu.svc_call"})
    lo, hi = DEFAULT_FACTORS
    v = table["rpc"]["default_method_cu"]
    assert ranges["rpc.default_method_cu"] == (lo * v, hi * v)
    a = table["tiers"]["RPC"]["daily_allowance_cu"]
    assert ranges["tiers.RPC.daily_allowance_cu"] == (lo * a, hi * a)
    assert "rpc.method_cu.svc_call" not in ranges            # set by the scenario
    assert "rpc.method_cu.svc_pendingBlock" not in ranges    # 0: unbilled
    assert not any(k.endswith(".monthly_usd") for k in ranges)
    assert all(k in ranges for k in ("websocket.publish_cu.pending-txs",
                                     "sizing.profile_gas_cap.fast", "sizing.item_base_cu"))


def test_with_prices_sets_a_tier_whose_name_holds_dots():
    from sim.config.price_ranges import rangeable, with_prices
    from sim.config.pricing import Pricing, default_pricing_table

    table = default_pricing_table()
    table["tiers"]["Ent.v2"] = {"daily_allowance_cu": 100.0, "monthly_usd": 7.0}
    pricing = Pricing.model_validate(table)
    assert rangeable(pricing)["tiers.Ent.v2.daily_allowance_cu"] == 100.0
    out = with_prices(pricing, {"tiers.Ent.v2.daily_allowance_cu": 250.0,
                                "tiers.Streams + RPC.monthly_usd": 1.5,
                                "rpc.default_method_cu": 3.0})
    assert out.tiers["Ent.v2"].daily_allowance_cu == 250.0
    assert out.tiers["Streams + RPC"].monthly_usd == 1.5
    assert out.rpc.default_method_cu == 3.0 and out.rpc.cost("eth_call") == 3.0


@pytest.mark.parametrize("ranges", [
    '"rpc.method_cu.svc_call" = [20, 20000]\n',  # both bounds themselves
    '"rpc.method_cu.svc_pendingBlock" = [0, 1e6]\n',
])
def test_ranges_at_the_bounds_are_accepted(tmp_path, ranges):
    path = write_scenario(tmp_path, top="", tables="[price_ranges]\n" + ranges)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("table, field", [
    ("[pricing.rpc.method_cu]\nsvc_call = -20\n", "pricing.rpc.method_cu.svc_call"),
    ("[pricing.rpc]\ndefault_method_cu = -1\n", "pricing.rpc.default_method_cu"),
    ("[pricing.websocket.publish_cu]\nnew-blocks = -5\n",
     "pricing.websocket.publish_cu.new-blocks"),
    ("[pricing.sizing.profile_gas_cap]\nfast = -1\n", "pricing.sizing.profile_gas_cap.fast"),
])
def test_a_negative_price_is_a_user_error(tmp_path, table, field):
    """A negative price "refunds" CU on every call: any tier meets any SLO with a
    negative bill (issue 33). Refused by the pricing model, naming the file and key."""
    path = write_scenario(tmp_path, top="", tables=table)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:" in result.output and field in result.output
    assert "greater than or equal to 0" in result.output
