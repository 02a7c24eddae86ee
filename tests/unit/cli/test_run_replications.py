"""``capsim run --replications N`` through the command line: output, bounds, size guard."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from scenarios import write_scenario

from sim.cli.main import main
from sim.workload.size_estimate import check

ARGS = ["--set", "duration=60", "--tier", "RPC", "--tier", "All 3 APIs", "--tier",
        "Advanced bundle"]


def run_cli(*args):
    return CliRunner().invoke(main, ["run", *args])


def test_replications_section_in_stdout_report_and_summary(tmp_path):
    rep, plain = tmp_path / "rep", tmp_path / "plain"
    result = run_cli(*ARGS, "--replications", "3", "--out", str(rep))
    assert result.exit_code == 0, result.output
    assert run_cli(*ARGS, "-q", "--out", str(plain)).exit_code == 0
    out = result.output
    assert "across 3 replications" in out
    for tier in ("RPC", "All 3 APIs", "Advanced bundle"):
        assert any(line.strip().startswith(tier) and "meets the SLO in" in line
                   and "of 3 (95 % interval" in line for line in out.splitlines())
    assert "held in" in out and "recommended per replication:" in out
    doc = json.loads((rep / "summary.json").read_text())
    # (the default scenario runs compiled under auto: the engine key comes last)
    assert doc["replications"]["n"] == 3 and list(doc)[-2:] == ["replications", "engine"]
    assert len(doc["replications"]["runs"]) == 3
    # Everything but the section is the plain run's; the records are replication 0's.
    del doc["replications"]
    assert doc == json.loads((plain / "summary.json").read_text())
    assert pd.read_parquet(rep / "requests.parquet").equals(
        pd.read_parquet(plain / "requests.parquet"))
    md = (rep / "report.md").read_text()
    assert "## Across replications" in md and "records are replication 0's alone" in md
    assert "## Across replications" not in (plain / "report.md").read_text()
    assert "Across replications" in (rep / "report.html").read_text()


@pytest.mark.parametrize("n", ["0", "1001", "x"])
def test_a_bad_number_is_one_line_and_exit_2(tmp_path, n):
    result = run_cli(*ARGS, "--replications", n, "--out", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert result.output.startswith("capsim: error:") and "Traceback" not in result.output
    assert "--replications" in result.output
    assert not (tmp_path / "r").exists()


def test_the_request_limit_counts_every_replication(tmp_path):
    # Poisson at 1/s for 60 s: 60 requests expected per tier; a limit of 100 admits one
    # replication (60) and refuses two (120).
    path = write_scenario(tmp_path, rate=1, duration=60, tiers=["RPC"])
    ok = run_cli(str(path), "-q", "--max-requests", "100", "--out", str(tmp_path / "one"))
    assert ok.exit_code == 0, ok.output
    refused = run_cli(str(path), "-q", "--max-requests", "100", "--replications", "2",
                      "--out", str(tmp_path / "two"))
    assert refused.exit_code == 2 and "run too large" in refused.output
    assert "2 replications (120 simulated per tier)" in refused.output
    assert "--replications" in refused.output
    assert not (tmp_path / "two").exists()


def test_the_estimate_counts_workers_and_spools_of_replications(tmp_path):
    from sim.config.selection import load_scenario

    loaded = load_scenario(str(write_scenario(tmp_path, rate=1, duration=60, tiers=["RPC"])))
    one, _ = check(loaded, available=None, disk_free=None)
    three, _ = check(loaded, replications=3, jobs=2)
    assert three.replications == 3 and one.replications == 1
    # One tier: replication 0's spool, plus one per worker for the other replications.
    assert three.disk_bytes_needed() == pytest.approx(3 * one.disk_bytes_needed())
    assert three.bytes_needed() > one.bytes_needed()  # two workers instead of none
