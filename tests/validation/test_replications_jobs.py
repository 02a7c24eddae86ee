"""``capsim run --replications N``: the same outputs whatever ``--jobs`` is.

``--jobs`` spreads replication 0's tiers, then the other replications' (replication,
tier) pairs, over worker processes; each draws its replication's demand from its seed,
so the report folder is the same byte for byte (Parquet: the same table)."""

from __future__ import annotations

import traceback

import pandas as pd
import pytest
from click.testing import CliRunner

from sim.cli.main import main

ARGS = ["--set", "duration=90", "--tier", "RPC", "--tier", "All 3 APIs",
        "--tier", "Professional bundle", "--replications", "4", "-q"]


@pytest.mark.slow
def test_replications_do_not_depend_on_jobs(tmp_path):
    for jobs in ("1", "2", "3"):
        result = CliRunner().invoke(main, ["run", *ARGS, "--jobs", jobs,
                                           "--out", str(tmp_path / jobs)])
        assert result.exit_code == 0, (jobs, result.output,
                                       "".join(traceback.format_exception(*result.exc_info)))
    for jobs in ("2", "3"):
        for name in ("summary.json", "report.md", "report.html", "tier_comparison.png"):
            assert (tmp_path / "1" / name).read_bytes() == (tmp_path / jobs / name).read_bytes(), \
                (jobs, name)
        for name in ("requests.parquet", "windows.parquet"):
            assert pd.read_parquet(tmp_path / "1" / name).equals(
                pd.read_parquet(tmp_path / jobs / name)), (jobs, name)
