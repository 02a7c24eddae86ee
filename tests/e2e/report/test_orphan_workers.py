"""Killing a ``capsim run --jobs N`` ends its workers, and a lock its dead process left
held is taken over (issue 21 item 4).

Before: SIGKILL on the parent orphaned its workers, which ran on and kept the report
folder's lock (a forked copy of the descriptor) for good: every later run into the
folder failed with "another capsim run is writing this report folder".
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scenarios import poisson_source, scenario_text

from sim.core.errors import CapsimError
from sim.report.folder import ReportFolder

# Two tiers of a day at 20/s: each worker simulates far longer than the test waits.
LONG = scenario_text(name="long", duration=86400, tiers=["RPC", "RPC + Search"],
                     sources=poisson_source(20) + "mix = { svc_call = 1.0 }\n")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition, limit_s: float) -> bool:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_killing_the_parent_ends_its_workers_and_frees_the_folder(tmp_path):
    (tmp_path / "long.toml").write_text(LONG)
    out = tmp_path / "rep"
    parent = subprocess.Popen([sys.executable, "-m", "sim.cli.main", "run",
                               str(tmp_path / "long.toml"), "--jobs", "2", "-q",
                               "--out", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        assert wait_for(lambda: len(children(parent.pid)) >= 2, 120), "no workers started"
        workers = children(parent.pid)
        time.sleep(1.0)  # the workers are simulating
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_for(lambda: not any(alive(w) for w in workers), 30), \
            "workers outlived their parent"
        with ReportFolder(out):  # the lock is free: a new run may take the folder
            pass
    finally:
        for pid in [parent.pid, *workers]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.fixture
def orphan_holding_the_lock(tmp_path):
    """A process holding ``.rep.lock`` as an orphaned worker of a dead run would."""
    lock = tmp_path / ".rep.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    yield lock, holder
    holder.kill()
    holder.wait()


def test_a_lock_whose_recorded_holder_is_dead_is_taken_over(tmp_path, orphan_holding_the_lock):
    lock, holder = orphan_holding_the_lock
    lock.write_text(f"{_dead_pid()}\n")  # the run that took it is gone
    with ReportFolder(tmp_path / "rep") as folder:
        assert lock.read_text() == f"{os.getpid()}\n"
        with pytest.raises(CapsimError, match="another capsim run"):  # still exclusive
            ReportFolder(tmp_path / "rep").__enter__()
        assert folder.lock_path == lock
    assert holder.poll() is None  # the orphan itself is left alone


def test_a_lock_whose_holder_is_alive_is_respected(tmp_path, orphan_holding_the_lock):
    lock, holder = orphan_holding_the_lock
    lock.write_text(f"{holder.pid}\n")
    with pytest.raises(CapsimError, match="another capsim run is writing"):
        ReportFolder(tmp_path / "rep").__enter__()
    assert lock.read_text() == f"{holder.pid}\n"


def test_the_moved_aside_lock_is_removed_once_free(tmp_path, orphan_holding_the_lock):
    lock, holder = orphan_holding_the_lock
    lock.write_text(f"{_dead_pid()}\n")
    with ReportFolder(tmp_path / "rep"):
        pass
    stale = list(tmp_path.glob(".rep.lock.stale-*"))
    assert len(stale) == 1
    holder.kill()
    holder.wait()
    with ReportFolder(tmp_path / "rep"):
        pass
    assert not list(tmp_path.glob(".rep.lock.stale-*"))


def test_workers_do_not_hold_the_parents_lock(tmp_path):
    """A worker closes its copy of the lock: with the parent's released, it is free."""
    from sim.core.workers import process_pool

    folder = ReportFolder(tmp_path / "rep")
    with folder:
        pool = process_pool(1)
        pool.submit(os.getpid).result()  # the worker is up (and holds no copy)
    try:
        fd = os.open(folder.lock_path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the worker held it
        finally:
            os.close(fd)
    finally:
        pool.shutdown()
