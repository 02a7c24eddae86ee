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
    ('"tiers.RPC.monthly_usd" = [1, 2]\n', "unknown price"),
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
