"""A killed run's spool folder is removed by the next run; a live run's is kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from sim.runner.records import SPOOL_PREFIX, UNLOCKED_STALE_S, remove_stale_spools, spool_folder

CHILD = """
import os, sys
from sim.runner.records import spool_folder
folder = spool_folder(sys.argv[1])
open(os.path.join(folder.name, "tier0"), "w").write("rows")
print(folder.name, flush=True)
sys.stdin.readline()  # hold the folder until told
"""


def _child(parent):
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(parent)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    return p, p.stdout.readline().strip()


def test_a_killed_runs_spool_is_removed_and_a_live_runs_is_kept(tmp_path):
    killed, killed_dir = _child(tmp_path)
    live, live_dir = _child(tmp_path)
    try:
        killed.send_signal(signal.SIGKILL)  # no chance to clean up
        killed.wait()
        assert os.path.isdir(killed_dir) and os.path.isdir(live_dir)
        mine = spool_folder(str(tmp_path))  # the next run
        assert not os.path.exists(killed_dir)
        assert os.path.isfile(os.path.join(live_dir, "tier0"))
        assert os.path.isdir(mine.name)
        assert remove_stale_spools(str(tmp_path)) == []  # its own folder is in use too
        mine.cleanup()
        assert not os.path.exists(mine.name)
    finally:
        live.communicate("\n")
    assert not os.path.exists(live_dir)  # removed by its own run on exit


def test_unlocked_folders_are_removed_only_when_old(tmp_path):
    old, new = tmp_path / (SPOOL_PREFIX + "old"), tmp_path / (SPOOL_PREFIX + "new")
    other = tmp_path / "not-a-spool"
    for d in (old, new, other):
        d.mkdir()
    past = time.time() - UNLOCKED_STALE_S - 60
    os.utime(old, (past, past))
    os.utime(other, (past, past))
    assert remove_stale_spools(str(tmp_path)) == [old]
    assert new.is_dir() and other.is_dir()


def test_a_killed_runs_making_folder_goes_once_its_lock_is_free_a_live_ones_stays(tmp_path):
    """A run killed between making its spool folder and renaming it left
    ``capsim-making-*/.lock`` for a day; a making folder lives microseconds, so one a
    minute old whose lock nobody holds is removed (one being made is locked, or new)."""
    import fcntl

    from sim.runner.records import _MAKING_PREFIX, MAKING_STALE_S

    dead, held, young = (tmp_path / (_MAKING_PREFIX + n) for n in ("dead", "held", "young"))
    for d in (dead, held, young):
        d.mkdir()
        (d / ".lock").write_text("")
    past = time.time() - MAKING_STALE_S - 5
    for d in (dead, held):
        os.utime(d, (past, past))
    fd = os.open(held / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a run still making it (or stopped in a debugger)
    try:
        assert remove_stale_spools(str(tmp_path)) == [dead]
        assert held.is_dir() and young.is_dir()
    finally:
        os.close(fd)


def test_a_closed_run_output_has_removed_its_spool_at_once(tmp_path, monkeypatch):
    """Not when the garbage collector gets to it (a run's output is freed by the cyclic
    collector: a sweep's worker could fill the disk with spools meanwhile)."""
    import gc
    import tempfile

    import sim

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gc.disable()
    try:
        with sim.run(None, overrides=["duration=30"], tiers=["RPC", "Search"]) as result:
            assert len(list(tmp_path.glob(SPOOL_PREFIX + "*"))) == 1
            assert len(result.attempts) > 0
        assert not list(tmp_path.glob(SPOOL_PREFIX + "*"))
        with pytest.raises(RuntimeError, match="output was closed"):
            result.attempts  # noqa: B018 (a clear error, not a missing file)
        with pytest.raises(RuntimeError, match="output was closed"):
            result.write(tmp_path / "late")
        assert not (tmp_path / "late" / "summary.json").exists()  # no half report
    finally:
        gc.enable()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_capsim_run_removes_its_spool_once_the_report_is_written(tmp_path, monkeypatch,
                                                                  jobs):
    """With ``--jobs 2`` the parent writes ``requests.parquet`` into the spool as tiers
    finish and the report links it: it must outlive the spool."""
    import gc
    import tempfile

    import pandas as pd
    from click.testing import CliRunner

    from sim.cli.main import main

    spools = tmp_path / "tmp"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    gc.disable()
    try:
        result = CliRunner().invoke(main, ["run", "--set", "duration=30", "--tier", "RPC",
                                           "--tier", "Search", "-q", "--jobs", jobs,
                                           "--out", str(tmp_path / "rep")])
        assert result.exit_code == 0, result.output
        assert not list(spools.glob(SPOOL_PREFIX + "*"))
        rows = pd.read_parquet(tmp_path / "rep" / "requests.parquet")
        assert set(rows["tier"].astype(str)) == {"RPC", "Search"} and len(rows) > 100
    finally:
        gc.enable()
