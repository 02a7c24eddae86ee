"""``capsim run --robust`` on recorded traffic priced by ``rpc.default_method_cu``
(issue 29, part 2: "--robust on traffic priced by default_method_cu varies it").

tests/fixtures/geth-style-requests.log holds 11 JSON-RPC calls (test_echo,
test_echoWithCtx, rpc_modules, eth_subscribe, eth_unsubscribe) within 8 seconds, none of
them priced under ``[pricing.rpc.method_cu]``: every one costs ``default_method_cu``
(shipped: 10 CU, default range 5 to 20). Replayed once in a 120-s run on RPC (4,000 CU
per 12-s window, $49) and Professional bundle (50,000, $499):

* at up to 20 CU the 11 calls need at most 220 CU, in one window or two: RPC meets at
  every end (its allowance, even halved, lasts 3.6e6 / (220 * 30) h), so RPC is
  recommended everywhere and the verdict is robust;
* the trace covers less than one 12-s window of the run, so the allowance is judged at
  the rate of that window (11 c CU per 12 s): at 500 CU a call RPC's allowance lasts
  7.2e6 * 12 / (5,500 * 3,600) = 4.4 h < 24 h and fails, while Professional bundle's
  (9e7) lasts 54.5 h and meets: Professional bundle is recommended at the high end (at
  2,000 CU it would last 13.6 h and no tier would meet);
* svc_call, sizing and websocket prices are never paid: listed as not used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sim.cli.main import main

pytestmark = pytest.mark.slow

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "geth-style-requests.log"


def scenario(tmp_path: Path, extra: str = "") -> Path:
    trace = tmp_path / "geth.parquet"
    if not trace.exists():
        done = CliRunner().invoke(main, ["trace", "import", str(LOG), "--out", str(trace)])
        assert done.exit_code == 0, done.output
    path = tmp_path / "replay.toml"
    path.write_text('name = "geth"\nduration = 120\ntiers = ["RPC", "Professional bundle"]\n'
                    '[account]\nkeys = ["k"]\n[clients.default]\nretry = { policy = "none" }\n'
                    + extra + '[[sources]]\nname = "recorded"\nkey = "k"\n'
                    'trace = "geth.parquet"\n', encoding="utf-8")
    return path


def robust_run(tmp_path: Path, extra: str = "") -> tuple[dict, str]:
    out = tmp_path / "out"
    done = CliRunner().invoke(main, ["run", str(scenario(tmp_path, extra)), "--robust",
                                     "--records", "none", "--out", str(out)],
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return json.loads((out / "summary.json").read_text())["recommended"], done.output


def test_default_method_cu_is_varied_and_unused_prices_are_listed(tmp_path):
    rec, stdout = robust_run(tmp_path)
    rows = {r["price"]: r for r in rec["sensitivity"]}
    default = rows["rpc.default_method_cu"]
    assert (default["estimate"], default["low"], default["high"]) == (10.0, 5.0, 20.0)
    assert default["source"] == "default"
    assert (default["at_low"], default["at_high"]) == ("RPC", "RPC")
    assert rec["tier"] == rec["at_low_prices"] == rec["at_high_prices"] == "RPC"
    assert rec["robust"] is True and rec["used_not_varied"] == []
    assert {"rpc.method_cu.svc_call", "sizing.item_base_cu", "websocket.connect_cu"} <= set(
        rec["not_used"])
    assert not set(rows) & set(rec["not_used"])     # unused prices are never simulated
    assert "robust (every price this traffic pays was varied)" in stdout
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| `rpc.method_cu.svc_call` | 20 | – | not used by this traffic |" in report


def test_a_wide_default_price_range_flips_it(tmp_path):
    rec, stdout = robust_run(tmp_path, '[price_ranges]\n"rpc.default_method_cu" = [10, 500]\n')
    default = next(r for r in rec["sensitivity"] if r["price"] == "rpc.default_method_cu")
    assert (default["at_low"], default["at_high"]) == ("RPC", "Professional bundle")
    assert default["flips"] and rec["robust"] is False
    assert rec["at_high_prices"] == "Professional bundle"
    assert "NOT robust: flips with rpc.default_method_cu" in stdout


def test_a_default_price_set_without_a_range_is_named_as_not_varied(tmp_path):
    rec, stdout = robust_run(tmp_path, "[pricing.rpc]\ndefault_method_cu = 10\n")
    assert rec["used_not_varied"] == ["rpc.default_method_cu"]
    assert "rpc.default_method_cu" not in {r["price"] for r in rec["sensitivity"]}
    assert rec["robust"] is False
    assert "not varied: rpc.default_method_cu" in stdout
