"""``capsim calibrate`` end to end on the shipped sample (workloads/traces/
calibration-sample.csv, answered by tests/helpers/calib_reference.py with hidden prices: svc_call
23 CU, item base 7 CU, 2e-5 CU per gas, connect 45 CU, caps fast 1e6 / deep 4e6 gas,
windows at 7.37 s after each multiple of 12 s UTC)."""

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
    LimiterSettings(**table["limiter"])
    pricing = Pricing.model_validate(deep_merge(default_pricing_table(), table["pricing"]))
    assert pricing.rpc.cost("svc_call") == pytest.approx(23)
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "Confusion matrix" in html


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
