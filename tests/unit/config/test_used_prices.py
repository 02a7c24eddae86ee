"""Which prices a run's traffic pays (:mod:`sim.config.used_prices`).

The expected keys are read off the pricing rules as the spec and ``pricing.toml`` state
them (a method listed under ``[pricing.rpc.method_cu]`` pays its own price, any other
RPC method ``default_method_cu``; sizing pays the item base, the CU per gas and the caps
of the profiles sized; a websocket pays its connect cost and its stream's publish price),
for demand written down by hand here, not produced by the code under test.
"""

from __future__ import annotations

import pytest
from scenarios import write_scenario

from sim.config.pricing import DEFAULT_METHOD_KEY, Pricing, default_pricing_table
from sim.config.resolved import load
from sim.config.used_prices import (
    method_price_keys,
    prices_used,
    set_by_scenario,
    sizing_profiles_sent,
)

PRICING = Pricing.model_validate(default_pricing_table())


@pytest.mark.parametrize("method, expected", [
    ("svc_call", ("rpc.method_cu.svc_call",)),
    ("svc_pendingBlock", ("rpc.method_cu.svc_pendingBlock",)),
    ("eth_call", ("rpc.default_method_cu",)),
    ("eth_getCode", ("rpc.default_method_cu",)),
    ("POST /v1/size", ("sizing.item_base_cu", "sizing.cu_per_gas",
                       "sizing.profile_gas_cap.deep", "sizing.profile_gas_cap.fast")),
    ("pending-txs", ("websocket.connect_cu", "websocket.publish_cu.pending-txs")),
    ("monitoring", ("websocket.connect_cu", "websocket.publish_cu.monitoring")),
])
def test_each_method_pays_the_key_its_cost_reads(method, expected):
    assert method_price_keys(PRICING, method, ["fast", "deep"]) == expected
    assert DEFAULT_METHOD_KEY == "rpc.default_method_cu"


def test_a_method_map_price_moves_the_method_off_the_default():
    table = default_pricing_table()
    table["rpc"]["method_cu"]["eth_call"] = 26.0
    priced = Pricing.model_validate(table)
    assert method_price_keys(priced, "eth_call") == ("rpc.method_cu.eth_call",)
    assert priced.rpc.cost("eth_call") == 26.0 and PRICING.rpc.cost("eth_call") == 10.0


def test_recorded_rpc_traffic_without_a_method_map_pays_only_the_default_price():
    """The issue's case: recorded eth_call / eth_getCode on two tiers, one of which
    charged its allowance (the other refused everything with 402)."""
    used = prices_used(PRICING, {"eth_call", "eth_getCode"}, (), {"RPC"},
                       {"RPC", "Streams"})
    assert used == {"rpc.default_method_cu", "tiers.RPC.daily_allowance_cu",
                    "tiers.RPC.monthly_usd", "tiers.Streams.monthly_usd"}


def test_mixed_demand_pays_each_kind_of_price():
    used = prices_used(PRICING, {"svc_call", "POST /v1/size", "new-blocks"}, ["standard"],
                       {"Advanced bundle"}, {"Advanced bundle"})
    assert used == {"rpc.method_cu.svc_call", "sizing.item_base_cu", "sizing.cu_per_gas",
                    "sizing.profile_gas_cap.standard", "websocket.connect_cu",
                    "websocket.publish_cu.new-blocks",
                    "tiers.Advanced bundle.daily_allowance_cu",
                    "tiers.Advanced bundle.monthly_usd"}
    # nothing here pays the default price, the other caps or the other streams
    assert not used & {"rpc.default_method_cu", "sizing.profile_gas_cap.fast",
                       "websocket.publish_cu.pending-txs"}


def test_keys_the_pricing_does_not_hold_are_left_out():
    """A custom tier without an allowance has no allowance to vary."""
    used = prices_used(PRICING, set(), (), {"Nope"}, {"Nope"})
    assert used == set()


def test_sizing_profiles_sent_are_those_of_positive_weight(tmp_path):
    source = ('[[sources]]\nname = "s"\nkey = "k"\narrival = { process = "poisson", '
              'rate = 1 }\nmix = { svc_call = 1, "POST /v1/size" = 1 }\n'
              'sizing = { profiles = { fast = 1, deep = 0 } }\n'
              '[[sources]]\nname = "t"\nkey = "k"\narrival = { process = "poisson", '
              'rate = 1 }\nmix = { svc_call = 1 }\n'
              'sizing = { profiles = { standard = 1 } }\n')
    loaded = load(write_scenario(tmp_path, sources=source))
    assert sizing_profiles_sent(loaded) == {"fast"}


def test_custom_tiers_and_pricing_tables_count_as_set_by_the_scenario(tmp_path):
    tables = ('[pricing.rpc]\ndefault_method_cu = 12\n'
              '[[custom_tiers]]\nname = "Ent"\ncu_per_window = 9000\n'
              'daily_allowance_cu = 1e7\nmonthly_usd = 300\n')
    loaded = load(write_scenario(tmp_path, tiers=["Ent"], tables=tables))
    given = set_by_scenario(loaded)
    assert {"rpc.default_method_cu", "tiers.Ent.daily_allowance_cu",
            "tiers.Ent.monthly_usd"} <= given
    assert "rpc.method_cu.svc_call" not in given


def test_only_the_run_s_tiers_have_prices_in_the_run(tmp_path):
    from sim.config.used_prices import priced_in_run

    keys = set(priced_in_run(load(write_scenario(tmp_path, tiers=["RPC"]))))
    assert {"tiers.RPC.daily_allowance_cu", "tiers.RPC.monthly_usd",
            "rpc.default_method_cu", "websocket.connect_cu"} <= keys
    assert not any(k.startswith("tiers.Search.") for k in keys)
