"""``capsim run --dask-local N`` / ``--dask-scheduler ADDRESS``: the tiers (and the
replications' tiers) spread over a real Dask cluster write the same report tables and
``summary.json`` as the run in one process."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from sim.cli.main import main

ARGS = ["--tier", "RPC", "--tier", "Search", "--tier", "All 3 APIs", "--set", "duration=60",
        "-q"]


def _run(out, *extra) -> None:
    r = CliRunner().invoke(main, ["run", "workloads/mixed-bundle.toml", "--out", str(out),
                                  *ARGS, *extra])
    assert r.exit_code == 0, r.output


def _same(a, b) -> None:
    assert (a / "summary.json").read_text() == (b / "summary.json").read_text()
    for name in ("requests.parquet", "windows.parquet"):
        assert pd.read_parquet(a / name).equals(pd.read_parquet(b / name)), name


def test_dask_local_writes_what_the_local_run_writes(tmp_path):
    _run(tmp_path / "local", "--replications", "2")
    _run(tmp_path / "dask", "--replications", "2", "--dask-local", "2")
    _same(tmp_path / "local", tmp_path / "dask")


def test_dask_scheduler_address_runs_the_tiers_there(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client, distributed.get_task_stream(client) as stream:
            _run(tmp_path / "remote", "--dask-scheduler", cluster.scheduler_address)
        ran = [t for t in stream.data if t["key"].startswith("_run_tier_item")]
        assert len(ran) == 3  # one task per tier, run by the cluster's workers
    _run(tmp_path / "local")
    _same(tmp_path / "local", tmp_path / "remote")


def test_dask_and_jobs_are_one_or_the_other(tmp_path):
    r = CliRunner().invoke(main, ["run", "--out", str(tmp_path / "x"), "--jobs", "2",
                                  "--dask-local", "2", *ARGS])
    assert r.exit_code == 2
    assert "expected at most one of --jobs N, --dask-scheduler, --dask-local" in r.output
