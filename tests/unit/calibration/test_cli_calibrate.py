"""``capsim calibrate`` end to end on the shipped sample (workloads/traces/
calibration-sample.csv, written by ``python tests/helpers/calib_reference.py``: answered by the
reference with hidden prices svc_call 23 CU, item base 7 CU, 2e-5 CU per gas, connect
45 CU, caps fast 1e6 / deep 4e6 gas, windows at 7.37 s after each multiple of 12 s UTC,
refunds to the origin window)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

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
