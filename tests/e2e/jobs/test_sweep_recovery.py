"""A sweep folder recovers from what a fault or a kill left in it (issue 21 item 5).

One corrupt ``runs/*.json`` blocked the sweep for good (every rerun failed reading it):
now that run is simulated again, saying so. A sweep killed (SIGKILL, a real one) during
its final write left its ``.report-*`` staging folder in the sweep folder for good: now
the next run of the sweep removes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from click.testing import CliRunner
from scenarios import poisson_source, scenario_text

from sim.cli.main import main
from sim.jobs.sweep import run_sweep
from sim.jobs.sweep_plan import plan_sweep

SCENARIO = scenario_text(name="rec", duration=30, tiers=["RPC"], top="seed = 3\n",
                         sources=poisson_source(2) + "mix = { svc_call = 1.0 }\n")


def _sweep(tmp_path: Path, out: Path):
    return CliRunner().invoke(main, ["sweep", str(tmp_path / "rec.toml"), "--vary",
                                     "sources[0].arrival.rate=1,2", "--out", str(out)])


def test_a_corrupt_run_is_simulated_again_saying_so(tmp_path):
    (tmp_path / "rec.toml").write_text(SCENARIO)
    out = tmp_path / "sw"
    r = _sweep(tmp_path, out)
    assert r.exit_code == 0, r.output
    runs = sorted((out / "runs").glob("*.json"))
    assert len(runs) == 2
    good = runs[0].read_bytes()
    runs[0].write_bytes(good[: len(good) // 2])  # a torn write, a disk fault
    r = _sweep(tmp_path, out)
    assert r.exit_code == 0, r.output
    assert f"capsim: warning: {runs[0]}: unreadable" in r.output
    assert "simulating run" in r.output and "(1 simulated now, 1 already" in r.output
    assert runs[0].read_bytes() == good  # the same run again: the same bytes


def test_a_run_file_that_is_not_a_summary_is_run_again(tmp_path):
    (tmp_path / "rec.toml").write_text(SCENARIO)
    plan = plan_sweep(tmp_path / "rec.toml", vary=["sources[0].arrival.rate=1,2"])
    out = tmp_path / "sw"
    run_sweep(plan, out)
    victim = out / "runs" / f"{plan.runs[1].run_id}.json"
    victim.write_text('{"hello": 1}')
    said = []
    result = run_sweep(plan, out, notice=said.append)
    assert result.ran == [plan.runs[1].run_id]
    assert len(said) == 1 and "no schema_version" in said[0]


KILLER = """
import os, signal, sys
import sim.jobs.sweep as sweep
from sim.jobs.sweep_plan import plan_sweep

def die(*a, **k):
    os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of the final write

sweep.render_markdown = die
plan = plan_sweep(sys.argv[1], vary=["sources[0].arrival.rate=1,2"])
sweep.run_sweep(plan, sys.argv[2])
"""


def test_a_sweep_killed_during_its_final_write_leaves_no_staging_folder(tmp_path):
    (tmp_path / "rec.toml").write_text(SCENARIO)
    out = tmp_path / "sw"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLER),
                           str(tmp_path / "rec.toml"), str(out)],
                          capture_output=True, timeout=300, env={**os.environ})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert list(out.glob(".report-*"))  # the kill did leave its staging folder
    r = _sweep(tmp_path, out)
    assert r.exit_code == 0, r.output
    assert not list(out.glob(".report-*")) and not list(out.glob(".*.json.*"))
    assert (out / "report.md").is_file() and (out / "sweep.json").is_file()
