"""The waits a pacing change imposes, against closed forms.

Constant arrivals every 0.1 s of c = 20 CU each (200 CU/s). A bucket of 100 CU/s and no
burst: every request waits, the k-th (from 0) until (k + 1) 0.2 s after the first
arrival, so it waits 0.2 + 0.1 k s and the mean over n requests is 0.2 + 0.1 (n - 1) / 2.
A bucket of 400 CU/s holding 20 CU refills a whole request between arrivals: no wait.
"""

from __future__ import annotations

import pytest
from scenarios import write_scenario

from sim.advisor.delays import paced_waits
from sim.api import load_scenario
from sim.config.pricing import default_pricing_table

COST = default_pricing_table()["rpc"]["method_cu"]["svc_call"]
SOURCE = """[[sources]]
name = "app"
key = "k"
client = "app"
arrival = { process = "constant", rate = 10 }
mix = { svc_call = 1.0 }
"""


def _waits(tmp_path, rate, burst):
    tables = f"[clients.app]\npacing = {{ rate_cu_per_s = {rate}, burst_cu = {burst} }}\n"
    path = write_scenario(tmp_path, duration=60, tables=tables, sources=SOURCE)
    return paced_waits(load_scenario(path))


def test_a_bucket_slower_than_the_demand_delays_every_request(tmp_path):
    assert COST == 20
    w = _waits(tmp_path, 100, 0)
    n = w.requests
    assert n == 600 and w.delayed == n
    assert w.mean_wait_s == pytest.approx(0.2 + 0.1 * (n - 1) / 2, rel=1e-9)
    assert w.max_wait_s == pytest.approx(0.2 + 0.1 * (n - 1), rel=1e-9)


def test_a_bucket_that_refills_between_arrivals_delays_none(tmp_path):
    w = _waits(tmp_path, 400, 20)
    assert w.requests == 600 and w.delayed == 0 and w.mean_wait_s == 0.0


def test_no_paced_client_is_none(tmp_path):
    path = write_scenario(tmp_path, duration=60, sources=SOURCE.replace('client = "app"\n', ""))
    assert paced_waits(load_scenario(path)) is None
