"""A plausible typo must not make capsim start a thousand processes, bisect forever or
spin a CPU (issue 33, item 4): each resource an option requests is bounded, and a value
past the bound is refused while the command line is read -- exit 2, one line naming the
option and what was expected, before the scenario is even opened.

Every case names a scenario file that does not exist: a capsim that checks the option
only later (or never) fails on the missing file instead, so the test fails on it
without starting anything heavy.
"""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from sim.cli.main import main


def cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


def invoke(tmp_path, *args: str):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    return CliRunner().invoke(main, args, catch_exceptions=False)


MAX_JOBS = max(8, 2 * cpus())  # the documented rule: 2 per CPU, at least 8
MAX_REPLICATIONS = 100  # documented (docs/reference/cli.md)
MISSING = "{tmp}/missing.toml"
TOO_MANY = str(MAX_JOBS + 1)


@pytest.mark.parametrize("args, option", [
    (["run", MISSING, "--jobs", "1000", "--out", "{tmp}/o"], "--jobs"),
    (["run", MISSING, "--jobs", TOO_MANY, "--out", "{tmp}/o"], "--jobs"),
    (["sweep", MISSING, "--jobs", "1000", "--out", "{tmp}/o"], "--jobs"),
    (["sweep", MISSING, "--dask-local", "1000", "--out", "{tmp}/o"], "--dask-local"),
    (["headroom", MISSING, "--jobs", "1000"], "--jobs"),
    (["baseline", "save", MISSING, "--jobs", "1000", "--out", "{tmp}/b.json"], "--jobs"),
    (["check", MISSING, "--jobs", "1000", "--baseline", "{tmp}/b.json"], "--jobs"),
])
def test_too_many_worker_processes_are_refused(tmp_path, args, option):
    result = invoke(tmp_path, *args)
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith(f"capsim: error: {option}: ") and "worker processes" in line
    assert f"expected at most {MAX_JOBS}" in line
    assert "missing.toml" not in line  # refused before the scenario is read


def test_as_many_workers_as_allowed_get_past_the_option(tmp_path):
    result = invoke(tmp_path, "run", MISSING, "--jobs", str(MAX_JOBS), "--out", "{tmp}/o")
    assert result.exit_code == 2 and "missing.toml" in result.output  # the next mistake


@pytest.mark.parametrize("args, option", [
    (["headroom", MISSING, "--tolerance", "1e-17"], "--tolerance"),
    (["headroom", MISSING, "--tolerance", "0.0009"], "--tolerance"),
    (["headroom", MISSING, "--tolerance", "nan"], "--tolerance"),
    (["headroom", MISSING, "--tolerance", "inf"], "--tolerance"),
    (["headroom", MISSING, "--max-load", "inf"], "--max-load"),
    (["headroom", MISSING, "--max-load", "nan"], "--max-load"),
    (["headroom", MISSING, "--max-load", "1e300"], "--max-load"),
    (["headroom", MISSING, "--replications", str(MAX_REPLICATIONS + 1)], "--replications"),
    (["sweep", MISSING, "--replications", "100000", "--out", "{tmp}/o"], "--replications"),
    (["baseline", "save", MISSING, "--replications", "100000"], "--replications"),
    (["serve", MISSING, "--tier", "RPC", "--port", "0", "--time-scale", "inf"],
     "--time-scale"),
    (["serve", MISSING, "--tier", "RPC", "--port", "0", "--time-scale", "nan"],
     "--time-scale"),
    (["serve", MISSING, "--tier", "RPC", "--port", "0", "--time-scale", "1e9"],
     "--time-scale"),
    (["drive", MISSING, "--target", "https://127.0.0.1:9", "--time-scale", "inf"],
     "--time-scale"),
    (["drive", MISSING, "--target", "https://127.0.0.1:9", "--time-scale", "nan"],
     "--time-scale"),
])
def test_unbounded_precision_time_and_replications_are_refused(tmp_path, args, option):
    result = invoke(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert f"'{option}'" in result.output and "missing.toml" not in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args", [
    ["headroom", MISSING, "--tolerance", "0.001"],
    ["headroom", MISSING, "--max-load", "1e6"],
    ["headroom", MISSING, "--replications", str(MAX_REPLICATIONS)],
    ["serve", MISSING, "--tier", "RPC", "--port", "0", "--time-scale", "1000"],
])
def test_the_bounds_themselves_are_accepted(tmp_path, args):
    result = invoke(tmp_path, *args)
    assert result.exit_code == 2 and "missing.toml" in result.output  # the next mistake
