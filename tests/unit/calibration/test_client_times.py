"""Client-side times (``--client-times``): each decision's interval widened by the delay
bounds, the identified set wider, never narrower, than the data allow; closed forms on a
hand-made burst.

One burst of 400 ``svc_call`` sent 1 ms apart in the middle of a window (phase given),
the service admitting the first 365 (23 CU each against 8,400) and throttling the rest.
With exact times the decisions say 366 p > 8400 >= 365 p. With one delay anywhere in
0-40.5 ms the service may have decided them in any order within 40.5 ms: the last call
admitted (the 365th) certainly came after only the 324 sent more than 40.5 ms before
it, so 325 p <= 8400, and the first throttled one may have come after all 365
admitted: 366 p >= 8400 (only admitted calls hold CU). So p in [8400/366, 8400/325].
"""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from sim.calibration import calibrate
from sim.calibration.client import parse_delay_ms
from sim.cli.main import main
from sim.config.pricing import Pricing, default_pricing_table
from sim.config.scenario import LimiterSettings
from sim.config.tiers import find_tier
from sim.core.errors import CapsimError
from sim.traces.importers import import_trace

T0 = pd.Timestamp("2024-05-01T12:00:00Z")  # a multiple of 12 s after 00:00 UTC


@pytest.fixture(scope="module")
def burst(tmp_path_factory):
    rows = [{"timestamp": T0 + pd.Timedelta(seconds=4.0 + 0.001 * k), "api": "rpc",
             "method": "svc_call", "key": "k" * 32, "status": 200 if k < 365 else -32005,
             "latency_ms": 50.0} for k in range(400)]
    tmp = tmp_path_factory.mktemp("burst")
    pd.DataFrame(rows).to_csv(tmp / "b.csv", index=False)
    import_trace(tmp / "b.csv", tmp / "b.parquet")
    return tmp / "b.parquet"


def fit(path, **kw):
    settings = LimiterSettings(alignment="utc", phase_s=0.0)
    cal = calibrate(path, find_tier("All 3 APIs"),
                    Pricing.model_validate(default_pricing_table()),
                    limiter_settings=settings, fit=("decisions",), **kw)
    return {p.name: p for p in cal.prices}["rpc.method_cu.svc_call"], cal


def test_exact_times_pin_the_price(burst):
    p, _ = fit(burst)
    assert p.low == pytest.approx(8400 / 366, rel=1e-5)
    assert p.high == pytest.approx(8400 / 365, rel=1e-5)


def test_client_times_widen_the_interval_to_the_closed_form(burst):
    p, cal = fit(burst, client_times=True, delay_s=(0.0, 0.0405))
    assert p.low == pytest.approx(8400 / 366, rel=1e-5)
    assert p.high == pytest.approx(8400 / 325, rel=1e-5)
    assert cal.verdict == "fitted"
    assert any("log's clock" in n for n in cal.notes)


def test_delays_bounded_by_the_latency_widen_it_further(burst):
    # each delay within 0-50 ms (the latency): certainly before the 365th are the 314
    # sent more than 50 ms before it, so 315 p <= 8400
    p, _ = fit(burst, client_times=True)
    assert p.low == pytest.approx(8400 / 366, rel=1e-5)
    assert p.high == pytest.approx(8400 / 315, rel=1e-4)


@pytest.mark.parametrize("text", ["5", "a,b", "40,5", "-1,5", "1,1e9"])
def test_a_malformed_delay_is_a_user_error(text):
    with pytest.raises(CapsimError) as err:
        parse_delay_ms(text)
    assert err.value.field == "--delay-ms"


def test_delays_without_client_times_are_refused(burst, tmp_path):
    result = CliRunner().invoke(main, ["calibrate", str(burst), "--tier", "All 3 APIs",
                                       "--delay-ms", "1,20", "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and "only with --client-times" in result.output
    assert not (tmp_path / "c").exists()
