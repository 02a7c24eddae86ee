"""``capsim run --robust`` varies a method's price only when some replayed row pays it.

A replayed RPC row with a recorded ``cu`` reserves that CU, not its method's price (the
replay rule of :mod:`sim.workload.replay_source`); so when every replayed ``svc_call``
row carries one, ``rpc.method_cu.svc_call`` is never paid and must be listed as not
used; one row without a ``cu`` pays it, and then the price is varied.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from crafted_traces import write_trace
from scenarios import write_scenario

from sim.cli.main import main

KEY = "rpc.method_cu.svc_call"


def _robust_run(tmp_path, cus: list[float | None]) -> dict:
    rows = [{"t": float(i), **({} if cu is None else {"cu": cu})} for i, cu in enumerate(cus)]
    write_trace(tmp_path / "t.parquet", rows)
    scenario = write_scenario(
        tmp_path, duration=30, tiers=["RPC"], keys=["k"],
        tables='[clients.default]\nretry = { policy = "none" }\n',
        sources='[[sources]]\nname = "rec"\nkey = "k"\ntrace = "t.parquet"\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["run", str(scenario), "--robust", "--quiet",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads((out / "summary.json").read_text())["recommended"]


@pytest.mark.parametrize("cus, varied", [
    ([5.0] * 10, False),            # every row recorded its CU: the price is never paid
    ([5.0] * 9 + [None], True),     # one row without: it reserves the method's price
])
def test_svc_call_price_varied_only_when_a_replayed_row_lacks_a_recorded_cu(
        tmp_path, cus, varied):
    rec = _robust_run(tmp_path, cus)
    assert (KEY in {r["price"] for r in rec["sensitivity"]}) is varied
    assert (KEY in rec["not_used"]) is not varied
