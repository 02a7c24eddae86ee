"""``capsim sweep`` end to end: tables, intervals, variants, resume after a kill, the
folder guard, and the same ``points.parquet`` sequentially, on a pool and on Dask."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats
from sweep_fixtures import write_scenario

import sim
from sim.cli.main import main
from sim.jobs.executors import DaskExecutor, LocalPoolExecutor
from sim.jobs.sweep import run_sweep
from sim.jobs.sweep_plan import plan_sweep

ROOT = Path(__file__).resolve().parents[3]


def outputs(folder: Path) -> dict[str, bytes]:
    """Every non-hidden file of a sweep folder, by relative path."""
    files = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            files[str(rel)] = p.read_bytes()
    return files


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    path = write_scenario(tmp)
    plan = plan_sweep(path, vary=["load=0.5,1.5"], replications=4)
    return plan, run_sweep(plan, tmp / "out")


def test_points_table_has_one_row_per_point_variant_tier_replication(small_sweep):
    plan, result = small_sweep
    pts = pd.read_parquet(result.folder / "points.parquet")
    assert len(pts) == 2 * 3 * 2 * 4
    assert pts.groupby(["point", "variant", "tier"], observed=True).size().eq(4).all()
    assert set(pts["load"]) == {0.5, 1.5}
    # Each row is its run's summary: check one against runs/<id>.json, read independently.
    row = pts[(pts.point == 1) & (pts.variant == "no retries") & (pts.tier == "Big")
              & (pts.replication == 2)].iloc[0]
    run_id = next(r.run_id for r in plan.runs
                  if (r.point, r.variant, r.replication) == (1, "no retries", 2))
    summary = json.loads((result.folder / "runs" / f"{run_id}.json").read_text())
    big = next(t for t in summary["tiers"] if t["tier"] == "Big")
    assert row["throttle_rate"] == big["throttle_rate"]
    assert row["latency_p99_ms"] == big["latency_ms"]["p99"]
    assert row["requests"] == big["requests"]


def test_intervals_are_student_t_over_replications(small_sweep):
    _, result = small_sweep
    pts = pd.read_parquet(result.folder / "points.parquet")
    doc = json.loads((result.folder / "sweep.json").read_text())
    entry = next(p for p in doc["points"] if p["point"] == 1 and p["variant"] == "base")
    small = next(t for t in entry["tiers"] if t["tier"] == "Small")
    x = pts[(pts.point == 1) & (pts.variant == "base") & (pts.tier == "Small")]["cu_settled"]
    hw = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    assert small["cu_settled"]["n"] == 4
    assert small["cu_settled"]["mean"] == pytest.approx(x.mean(), rel=1e-12)
    assert small["cu_settled"]["half_width"] == pytest.approx(hw, rel=1e-9)
    met = pts[(pts.point == 1) & (pts.variant == "base")].groupby("tier", observed=True)[
        "meets_slo"].mean()
    assert small["slo_met_fraction"] == met["Small"]
    cheapest = entry["cheapest_meeting_slo"]
    meeting = [t["tier"] for t in entry["tiers"] if t["slo_met_fraction"] == 1.0]
    assert cheapest == (("Small" if "Small" in meeting else "Big") if meeting else None)


def test_variants_are_paired_differences_with_intervals(small_sweep):
    _, result = small_sweep
    pts = pd.read_parquet(result.folder / "points.parquet")
    doc = json.loads((result.folder / "sweep.json").read_text())
    d = next(e for e in doc["variant_differences"]
             if e["point"] == 0 and e["variant"] == "double traffic" and e["tier"] == "Big")

    def col(variant):
        sel = pts[(pts.point == 0) & (pts.variant == variant) & (pts.tier == "Big")]
        return sel.sort_values("replication")["cu_settled"].to_numpy()

    diff = col("double traffic") - col("base")
    assert d["cu_settled"]["mean"] == pytest.approx(diff.mean(), rel=1e-12)
    hw = stats.t.ppf(0.975, 3) * diff.std(ddof=1) / 2
    assert d["cu_settled"]["half_width"] == pytest.approx(hw, rel=1e-9)
    # The variant sets load = 2 in place of the point's 0.5 (a variant's overrides come
    # last): 4x the Poisson demand, unthrottled on 6000 CU / 12 s (at most 12 x 20 x 12 =
    # 2880 CU offered per window on average), so the difference is about 3x the base.
    assert d["cu_settled"]["mean"] == pytest.approx(3 * col("base").mean(), rel=0.15)
    md = (result.folder / "report.md").read_text()
    assert "double traffic (load=0.5): throttle rate" in md
    assert "![sweep_throttle_rate](sweep_throttle_rate.png)" in md
    html = (result.folder / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4


def test_a_folder_of_another_sweep_is_refused(small_sweep, tmp_path):
    plan, result = small_sweep
    other = plan_sweep(Path(plan.scenario_label), vary=["load=0.5,2"], replications=4)
    with pytest.raises(sim.CapsimError, match="another sweep"):
        run_sweep(other, result.folder)
    stray = tmp_path / "notasweep"
    stray.mkdir()
    (stray / "file.txt").write_text("x")
    with pytest.raises(sim.CapsimError, match="not a capsim sweep folder"):
        run_sweep(other, stray)


def test_rerunning_a_finished_sweep_runs_nothing_and_rewrites_the_same_files(small_sweep):
    plan, result = small_sweep
    before = outputs(result.folder)
    again = run_sweep(plan, result.folder)
    assert again.ran == []
    assert outputs(result.folder) == before


def test_resume_after_a_kill_runs_only_the_missing_runs(tmp_path):
    """A sweep is killed (SIGKILL) in a subprocess once a run is on disk; the same
    command finishes it, running only what was missing; every file then equals an
    uninterrupted sweep's, byte for byte."""
    path = write_scenario(tmp_path)
    args = ["sweep", str(path), "--vary", "load=0.5,1,1.5", "--replications", "3",
            "--set", "duration=600", "--no-variants"]
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "sim.cli.main", *args, "--out", str(killed)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    runs = killed / "runs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if runs.is_dir() and any(runs.glob("*.json")):
            break
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {p.stem for p in runs.glob("*.json")}
    assert 1 <= len(done_before) < 9, "the kill must land mid-sweep"
    assert not (killed / "sweep.json").exists()

    plan = plan_sweep(path, vary=["load=0.5,1,1.5"], replications=3,
                      overrides=["duration=600"], variants=False)
    resumed = run_sweep(plan, killed)
    assert sorted(resumed.ran) == sorted({r.run_id for r in plan.runs} - done_before)

    whole = tmp_path / "whole"
    result = CliRunner().invoke(main, [*args, "--out", str(whole)])
    assert result.exit_code == 0, result.output
    assert outputs(killed) == outputs(whole)


def test_sequential_pool_and_dask_give_identical_points(tmp_path):
    path = write_scenario(tmp_path)
    plan = plan_sweep(path, vary=["load=0.8,1.6"], replications=2, variants=False)
    seq = run_sweep(plan, tmp_path / "seq")
    with LocalPoolExecutor(2) as pool:
        par = run_sweep(plan, tmp_path / "pool", pool)
    with DaskExecutor(local_workers=2) as dask:
        assert dask.workers == 2
        dsk = run_sweep(plan, tmp_path / "dask", dask)
    seq_bytes = (seq.folder / "points.parquet").read_bytes()
    assert (par.folder / "points.parquet").read_bytes() == seq_bytes
    assert (dsk.folder / "points.parquet").read_bytes() == seq_bytes
    assert outputs(seq.folder) == outputs(par.folder) == outputs(dsk.folder)


def test_keep_records_writes_each_runs_tables(tmp_path):
    path = write_scenario(tmp_path)
    plan = plan_sweep(path, replications=2, variants=False, overrides=["duration=60"])
    result = run_sweep(plan, tmp_path / "out", keep_records=True)
    for run in plan.runs:
        folder = result.folder / "records" / run.run_id
        attempts = pd.read_parquet(folder / "requests.parquet")
        summary = json.loads((folder / "summary.json").read_text())
        assert len(attempts) == sum(t["attempts"] for t in summary["tiers"]) > 0


def test_cli_sweep_prints_the_answer_and_errors_cleanly(tmp_path):
    path = write_scenario(tmp_path)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", str(path), "--vary", "load=0.5", "--set",
                                  "duration=60", "--out", str(out), "--jobs", "2"])
    assert r.exit_code == 0, r.output
    assert "3 runs (3 simulated now, 0 already in the folder)" in r.output
    assert "cheapest tier meeting the SLO" in r.output
    assert "no retries (load=0.5): throttle rate" in r.output
    r = CliRunner().invoke(main, ["sweep", str(path), "--vary", "load=2", "--out", str(out)])
    assert r.exit_code == 2
    assert "another sweep" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["sweep", str(path), "--jobs", "2", "--dask-local", "2",
                                  "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "at most one of" in r.output


def test_points_columns_have_stable_types(small_sweep):
    _, result = small_sweep
    pts = pd.read_parquet(result.folder / "points.parquet")
    assert pts["requests"].dtype == np.int64
    assert pts["throttle_rate"].dtype == np.float64
    assert pts["meets_slo"].dtype == bool
    assert list(pts.columns[:6]) == ["point", "variant", "replication", "seed", "load", "tier"]
