"""The library API: sim.run, RunResult.write, the typed summary and sim.load_summary."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

import sim
from sim.cli.main import main
from sim.core.errors import CapsimError
from sim.results.summary import SCHEMA_VERSION, RunSummary, TierSummary

SHORT = ["duration=120"]


@pytest.fixture(scope="module")
def result():
    return sim.run(None, tiers=["RPC", "Advanced bundle"], overrides=SHORT)


def test_run_returns_typed_summary_and_frames(result):
    s = result.summary
    assert isinstance(s, RunSummary) and s.schema_version == SCHEMA_VERSION
    assert [t.tier for t in s.tiers] == ["RPC", "Advanced bundle"]
    assert all(isinstance(t, TierSummary) for t in s.tiers)
    assert s.duration_s == 120 and s.scenario == "default"
    # The frames and the summary describe the same attempts.
    for t in s.tiers:
        rows = result.attempts[result.attempts["tier"] == t.tier]
        assert len(rows) == t.attempts
        assert int((rows["outcome"] == "ok").sum()) == t.outcomes["ok"]
        assert len(result.windows[result.windows["tier"] == t.tier]) == t.cu.windows
    assert isinstance(result.streams, pd.DataFrame) and len(result.streams) > 0
    # RPC (4,000 CU per window) throttles the default scenario; the bundle does not.
    assert s.tier("RPC").throttle_rate > 0.1 and s.tier("Advanced bundle").throttle_rate == 0
    assert s.recommended.tier == "Advanced bundle"


def test_write_matches_capsim_run_and_reads_back(result, tmp_path):
    folder = result.write(tmp_path / "lib")
    cli = __import__("click.testing").testing.CliRunner().invoke(
        main, ["run", "-q", "--set", "duration=120", "--tier", "RPC",
               "--tier", "Advanced bundle", "--out", str(tmp_path / "cli")])
    assert cli.exit_code == 0, cli.output
    for name in ("summary.json", "requests.parquet", "windows.parquet", "streams.parquet",
                 "report.md"):
        assert (folder / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    doc = json.loads((folder / "summary.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert list(doc)[1:] == ["capsim_version", "scenario", "description", "scenario_file",
                             "seed", "start", "duration_s", "pseudonym_secret", "limiter",
                             "slo", "recommended", "tiers", "assumptions", "notes",
                             "engine"]  # the default scenario runs compiled under auto
    assert sim.load_summary(folder) == result.summary
    assert sim.load_summary(folder / "summary.json").to_json() == \
        (folder / "summary.json").read_text()


def test_seed_override_and_loaded_scenario(result):
    from sim.api import load_scenario

    loaded = load_scenario(None, overrides=SHORT, tiers=["RPC"])
    again = sim.run(loaded, seed=result.summary.seed + 1)
    assert again.summary.seed == result.summary.seed + 1
    assert again.summary.tiers[0].attempts != result.summary.tier("RPC").attempts
    with pytest.raises(ValueError, match="overrides"):
        sim.run(loaded, overrides=["duration=60"])


@pytest.mark.parametrize(("text", "expected"), [
    ("not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"scenario": "x"}', "no schema_version"),
    ('{"schema_version": 999}', "unknown schema version"),
    (json.dumps({"schema_version": SCHEMA_VERSION, "scenario": "x"}), "capsim_version"),
])
def test_load_summary_refuses_what_it_does_not_understand(tmp_path, text, expected):
    path = tmp_path / "summary.json"
    path.write_text(text)
    with pytest.raises(CapsimError, match=expected) as err:
        sim.load_summary(path)
    assert err.value.file == str(path)


def test_load_summary_missing_file(tmp_path):
    with pytest.raises(CapsimError, match="no such file"):
        sim.load_summary(tmp_path)


def test_user_errors_are_capsim_errors():
    with pytest.raises(CapsimError, match="duration"):
        sim.run(None, overrides=["duration=-5"])
    with pytest.raises(CapsimError):
        sim.run(None, tiers=["No such tier"], overrides=SHORT)


def test_import_sim_is_lazy():
    code = ("import sim, sys; assert 'simpy' not in sys.modules, 'simpy';"
            "assert 'pandas' not in sys.modules, 'pandas'; sim.load_summary;"
            "assert 'simpy' not in sys.modules, 'simpy after load_summary'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
