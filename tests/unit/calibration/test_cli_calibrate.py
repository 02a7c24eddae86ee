"""``capsim calibrate`` end to end on the shipped sample (workloads/traces/
calibration-sample.csv, written by ``python tests/helpers/calib_reference.py``: answered by the
reference with hidden prices svc_call 23 CU, item base 7 CU, 2e-5 CU per gas, connect
45 CU, caps fast 1e6 / deep 4e6 gas, windows at 7.37 s after each multiple of 12 s UTC,
refunds to the origin window)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from sim.cli.main import main
from sim.config.pricing import Pricing, deep_merge, default_pricing_table
from sim.config.scenario import LimiterSettings
from sim.traces.importers import import_trace

SAMPLE = Path(__file__).resolve().parents[3] / "workloads" / "traces" / \
    "calibration-sample.csv"


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "sample.parquet"
    import_trace(SAMPLE, path)
    return path


def run(*args):
    return CliRunner().invoke(main, ["calibrate", *map(str, args)], catch_exceptions=False)


def test_full_calibration_of_the_sample(sample, tmp_path):
    out = tmp_path / "cal"
    result = run(sample, "--tier", "All 3 APIs", "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
        ["calibration.json", "pricing.toml", "report.md", "report.html", "timeline.png"])
    doc = json.loads((out / "calibration.json").read_text())
    prices = {p["name"]: p for p in doc["prices"]}
    # the billed CU identify these exactly (the sample records cu on admitted rows)
    assert prices["rpc.method_cu.svc_call"]["value"] == pytest.approx(23)
    assert prices["sizing.cu_per_gas"]["value"] == pytest.approx(2e-5)
    assert prices["websocket.connect_cu"]["value"] == pytest.approx(45)
    assert abs(doc["window_phase"]["estimate_s"] - 7.37) < 1.0
    assert doc["agreement"]["after"] > doc["agreement"]["before"]
    # the confusion matrix counts every compared attempt once
    assert sum(sum(r.values()) for r in doc["confusion_after"].values()) == \
        doc["agreement"]["compared_after"]
    # pricing.toml pastes into a scenario: valid [limiter] and [pricing] tables
    table = tomllib.loads((out / "pricing.toml").read_text())
    limiter = LimiterSettings(**table["limiter"])
    # the sample was answered with refunds to the origin window (tests/helpers/calib_reference.py)
    assert doc["refund_rule"] in ("origin-window", "both fit")
    assert limiter.refund_to == "origin-window"
    ph = doc["window_phase"]["from_decisions"]
    assert ph["low_s"] <= 7.37 <= ph["high_s"]
    pricing = Pricing.model_validate(deep_merge(default_pricing_table(), table["pricing"]))
    assert pricing.rpc.cost("svc_call") == pytest.approx(23)
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "Confusion matrix" in html


HIDDEN = {"rpc.method_cu.svc_call": 23.0, "sizing.item_base_cu": 7.0,
          "sizing.cu_per_gas": 2e-5, "websocket.connect_cu": 45.0,
          "sizing.profile_cap_cu.fast": 20.0, "sizing.profile_cap_cu.deep": 80.0}
CAPS = {"fast": 1e6, "deep": 4e6}


def test_decisions_alone_on_the_sample(sample, tmp_path):
    """The bill not read (``--fit phase --fit decisions``): svc_call and CU per gas
    within 5 %, item base and each gas cap within 15 %, the phase within 1 s, every
    decision predicted, and no interval excludes a hidden value."""
    out = tmp_path / "dec"
    result = run(sample, "--tier", "All 3 APIs", "--fit", "phase", "--fit", "decisions",
                 "--out", out)
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "calibration.json").read_text())
    prices = {p["name"]: p for p in doc["prices"]}
    assert prices["rpc.method_cu.svc_call"]["value"] == pytest.approx(23, rel=0.05)
    assert prices["sizing.cu_per_gas"]["value"] == pytest.approx(2e-5, rel=0.05)
    assert prices["sizing.item_base_cu"]["value"] == pytest.approx(7, rel=0.15)
    for name, truth in HIDDEN.items():
        assert prices[name]["how"] == "decisions"
        assert prices[name]["low"] <= truth <= prices[name]["high"], name
    for prof, cap in CAPS.items():
        g = doc["gas_caps"][prof]
        assert g["value"] == pytest.approx(cap, rel=0.15)
        assert g["low"] <= cap <= g["high"]
    ph = doc["window_phase"]
    assert abs(ph["estimate_s"] - 7.37) < 1.0
    assert ph["from_decisions"]["low_s"] <= 7.37 <= ph["from_decisions"]["high_s"]
    assert doc["agreement"]["after"] >= 0.99
    assert doc["refund_rule"] in ("origin-window", "both fit")
    table = tomllib.loads((out / "pricing.toml").read_text())
    assert table["limiter"]["refund_to"] == "origin-window"


def test_reruns_are_byte_identical(sample, tmp_path):
    files = ("calibration.json", "pricing.toml", "report.md", "timeline.png")
    got = []
    for k in range(2):
        out = tmp_path / f"r{k}"
        assert run(sample, "--tier", "All 3 APIs", "--fit", "cu", "--fit", "phase",
                   "--out", out).exit_code == 0
        got.append([(out / f).read_bytes() for f in files])
    assert got[0] == got[1]


def test_user_errors_exit_2(sample, tmp_path):
    result = CliRunner().invoke(main, ["calibrate", str(sample), "--tier", "Gold"])
    assert result.exit_code == 2 and "unknown tier" in result.output
    result = CliRunner().invoke(main, ["calibrate", str(tmp_path / "none.parquet"),
                                       "--tier", "RPC"])
    assert result.exit_code == 2 and "no such file" in result.output


# -- issue 33: impossible inputs, a blind trace, no fit, one calibration per folder ---

def canonical(tmp_path, rows, name="t") -> Path:
    """A canonical trace from ``rows`` (dicts of canonical columns)."""
    csv = tmp_path / f"{name}.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    path = tmp_path / f"{name}.parquet"
    import_trace(csv, path)
    return path


def calls(n, status=200, api="rpc", method="svc_call", every_s=0.4, offset_s=0.0):
    return [{"timestamp": pd.Timestamp("2024-05-01T12:00:00Z")
             + pd.Timedelta(seconds=offset_s + k * every_s), "api": api, "method": method,
             "key": "k" * 32, "status": status, "latency_ms": 50.0} for k in range(n)]


@pytest.mark.parametrize("table, field", [
    ("[pricing.rpc.method_cu]\nsvc_call = -20\n", "rpc.method_cu.svc_call"),
    ("[rpc.method_cu]\nsvc_call = -20\n", "rpc.method_cu.svc_call"),  # bare keys too
    ("[pricing.sizing.profile_gas_cap]\nfast = -1\n", "sizing.profile_gas_cap.fast"),
])
def test_a_negative_start_price_is_a_user_error(tmp_path, table, field):
    trace = canonical(tmp_path, calls(30))
    prices = tmp_path / "prices.toml"
    prices.write_text(table, encoding="utf-8")
    out = tmp_path / "cal"
    result = run(trace, "--tier", "RPC", "--pricing", prices, "--out", out)
    assert result.exit_code == 2, result.output
    assert f"{prices}: {field}: " in result.output and "greater than or equal to 0" in \
        result.output
    assert not out.exists()


def test_a_trace_without_statuses_is_an_error_and_writes_nothing(tmp_path):
    trace = canonical(tmp_path, calls(40, status=None))
    out = tmp_path / "cal"
    result = run(trace, "--tier", "RPC", "--out", out)
    assert result.exit_code == 2, result.output
    assert f"{trace}: status: no attempt has a status the CU window decided" in result.output
    assert "40 rows: no status recorded" in result.output
    assert "nan" not in result.output and not out.exists()


def test_does_not_fit_says_so_and_names_the_tier(tmp_path):
    # 100 admitted search calls replayed against 'RPC', which has no search API: each is
    # predicted 402, none agrees (0 % after)
    trace = canonical(tmp_path, calls(100, api="search", method="GET /v1/blocks"))
    out = tmp_path / "cal"
    result = run(trace, "--tier", "RPC", "--out", out)
    assert result.exit_code == 0, result.output
    assert "0.00 % after" in result.output and "verdict: does not fit" in result.output
    assert "a wrong --tier" in result.output and "several accounts" in result.output
    doc = json.loads((out / "calibration.json").read_text())
    assert doc["verdict"] == "does not fit"
    assert "DOES NOT FIT" in (out / "pricing.toml").read_text()
    assert "verdict: **does not fit**" in (out / "report.md").read_text()


def test_the_folder_is_locked_before_the_fit_not_at_write_time(tmp_path, monkeypatch):
    """Two calibrations into one folder: the second must stop at once (exit 2), not fit
    for minutes and then replace the first one's folder. The lock file beside the folder
    is held by another process; the fit must not even start. And while a calibration
    fits, it holds that lock."""
    import fcntl
    import subprocess
    import sys

    import sim.calibration

    trace = canonical(tmp_path, calls(30))
    out = tmp_path / "cal"
    lock = tmp_path / ".cal.lock"
    real = sim.calibration.calibrate
    fitted = []

    def spy(*args, **kwargs):
        fd = os.open(lock, os.O_RDWR)
        try:  # the lock is already taken by this calibration: a second one cannot take it
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        fitted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sim.calibration, "calibrate", spy)
    assert lock.exists() is False
    assert run(trace, "--tier", "RPC", "--out", out).exit_code == 0
    assert fitted == [1]
    hold = ("import fcntl, sys\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(lock)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = (out / "calibration.json").read_bytes()
        result = run(trace, "--tier", "RPC", "--out", out)
        assert result.exit_code == 2, result.output
        assert "another capsim run is writing this report folder" in result.output
        assert fitted == [1]  # the second calibration never started fitting
        assert (out / "calibration.json").read_bytes() == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_a_missing_trace_creates_nothing_beside_the_folder(tmp_path):
    # the lock is taken before the fit, but only once the trace opens
    result = run(tmp_path / "none.parquet", "--tier", "RPC", "--out", tmp_path / "new" / "cal")
    assert result.exit_code == 2 and "no such file" in result.output
    assert not (tmp_path / "new").exists()
