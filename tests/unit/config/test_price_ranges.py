"""``[price_ranges]`` in a scenario: dotted pricing keys to [low, high], checked with a
user error naming the file, line and key (exit 2, no traceback)."""

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
])
def test_bad_price_ranges_are_user_errors(tmp_path, ranges, expected):
    path = write_scenario(tmp_path, top="", tables="[price_ranges]\n" + ranges)
    result = CliRunner().invoke(main, ["run", str(path), "-q", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert expected in result.output and "price_ranges" in result.output
    assert "Traceback" not in result.output


