"""The library beyond sim.run: sweep, headroom, check, import_trace and export_tables
return typed results and agree with their commands."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import sim
from sim.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
SHORT = ["duration=60"]


def cli(*args):
    done = CliRunner().invoke(main, [str(a) for a in args])
    assert done.exit_code in (0, 1), done.output
    return done


def test_sweep_returns_its_points(tmp_path):
    got = sim.sweep(None, vary=["load=0.5,1"], tiers=["RPC"], overrides=SHORT,
                    out=tmp_path / "sw", variants=False)
    assert isinstance(got, sim.SweepResult)
    # 2 loads x 1 tier x 1 replication, every one simulated now
    assert len(got.points) == 2 and len(got.ran) == 2
    assert [p.values for p in got.document.points] == [{"load": 0.5}, {"load": 1.0}]
    again = sim.sweep(None, vary=["load=0.5,1"], tiers=["RPC"], overrides=SHORT,
                      out=tmp_path / "sw", variants=False)
    assert again.ran == [] and again.points.equals(got.points)  # resumed, nothing rerun


def test_headroom_is_the_commands(tmp_path):
    args = dict(tiers=["Advanced bundle"], overrides=SHORT, max_load=4, tolerance=0.2)
    got = sim.headroom(None, **args)
    assert isinstance(got, sim.Headroom) and [t.tier for t in got.tiers] == ["Advanced bundle"]
    printed = cli("headroom", "--tier", "Advanced bundle", "--set", "duration=60",
                  "--max-load", "4", "--tolerance", "0.2", "--json", "-q")
    assert json.loads(printed.stdout) == json.loads(json.dumps(got.to_dict()))


def test_check_passes_on_its_own_baseline_and_fails_on_more_load(tmp_path):
    base = tmp_path / "b.json"
    cli("baseline", "save", ROOT / "workloads/searcher.toml", "--tier", "Search",
        "--set", "duration=60", "--out", base)
    same = sim.check(ROOT / "workloads/searcher.toml", baseline=base)
    assert isinstance(same, sim.Comparison)
    assert same.exit_code == 0 and not same.changed  # same inputs, same seed
    # Three times the load on one tier's fixed 12-s budget: more throttles, more CU.
    more = sim.check(ROOT / "workloads/searcher.toml", baseline=base, overrides=["load=3"])
    assert more.exit_code == 1
    assert {c.metric for c in more.regressions} & {"throttle_rate", "cu_per_day"}


def test_check_refuses_an_unknown_tolerance(tmp_path):
    base = tmp_path / "b.json"
    cli("baseline", "save", ROOT / "workloads/searcher.toml", "--tier", "Search",
        "--set", "duration=30", "--out", base)
    with pytest.raises(sim.CapsimError, match="unknown metric"):
        sim.check(ROOT / "workloads/searcher.toml", baseline=base,
                  tolerances={"throtle_rate": 0.1})


def test_import_trace_reports_the_rows(tmp_path):
    src = ROOT / "workloads/traces/sample.csv"
    rows = sum(1 for _ in csv.reader(src.open())) - 1  # minus the header
    got = sim.import_trace(src, tmp_path / "t.parquet")
    assert isinstance(got, sim.ImportReport)
    assert got.rows == rows and got.distinct_keys == 3
    assert len(pd.read_parquet(tmp_path / "t.parquet")) == rows


def test_export_tables_of_a_two_account_run(tmp_path):
    rep = tmp_path / "rep"
    cli("run", ROOT / "workloads/two-accounts.toml", "--set", "duration=60", "--out", rep, "-q")
    written = sim.export_tables(rep, tmp_path / "csv")
    assert sorted(p.name for p in written) == ["accounts.csv", "tiers.csv", "windows.csv"]
    summary = sim.load_summary(rep)
    tiers = pd.read_csv(tmp_path / "csv" / "tiers.csv")
    assert list(tiers["tier"]) == [t.tier for t in summary.tiers]
    assert list(tiers["throttle_rate"]) == [t.throttle_rate for t in summary.tiers]
    assert list(tiers["latency_ms_p99"]) == [t.latency_ms.p99 for t in summary.tiers]
    assert tiers["recommended"].sum() == (summary.recommended.tier is not None)
    windows = pd.read_csv(tmp_path / "csv" / "windows.csv")
    assert len(windows) == len(pd.read_parquet(rep / "windows.parquet"))
    accounts = pd.read_csv(tmp_path / "csv" / "accounts.csv")
    n_accounts = len(summary.tiers[0].plan.accounts)
    assert n_accounts == 2 and len(accounts) == n_accounts * len(summary.tiers)
    # the folder stays a report: a later run may replace it
    cli("run", ROOT / "workloads/two-accounts.toml", "--set", "duration=30", "--out", rep, "-q")


def test_export_never_overwrites_a_users_file(tmp_path):
    rep = tmp_path / "rep"
    cli("run", "--set", "duration=30", "--tier", "RPC", "--records", "none", "--out", rep,
        "-q")
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "tiers.csv").write_text("my,own\n")
    done = CliRunner().invoke(main, ["export", str(rep), "--out", str(tmp_path / "csv")])
    assert done.exit_code == 2 and "not overwritten" in done.output
    assert (tmp_path / "csv" / "tiers.csv").read_text() == "my,own\n"


def test_export_into_the_report_folder_itself_is_refused(tmp_path):
    """``--out`` naming RUN_DIR would add CSV files to a report folder that its help
    promises to leave as it is: a user's error, exit 2, and the folder unchanged."""
    rep = tmp_path / "rep"
    cli("run", "--set", "duration=30", "--tier", "RPC", "--records", "none", "--out", rep,
        "-q")
    before = sorted(p.name for p in rep.iterdir())
    done = CliRunner().invoke(main, ["export", str(rep), "--out", str(rep)])
    assert done.exit_code == 2 and "report folder itself" in done.output
    assert sorted(p.name for p in rep.iterdir()) == before
