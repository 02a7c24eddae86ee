"""A worker process forked while its parent's spool folder awaits the garbage collector
(a run's output is freed by the cyclic collector, so the folder outlives the run that
made it) must leave that folder, and the number of its lock, alone.

Before the fix, a worker's collector ran the folder's finalizer: it closed the lock's
number, which the worker had closed at its start and reused for a file of its own (the
file's next write failed with "Bad file descriptor", as ``capsim run --jobs 2`` once did
in CI after a ``--jobs 1`` run in the same process), and removed the parent's folder."""

from __future__ import annotations

import gc
import multiprocessing
from pathlib import Path

import pytest

from sim.core.workers import process_pool
from sim.runner.records import spool_folder


def _open_collect_write(path: str) -> str:
    with open(path, "w") as f:  # the lowest free number: the parent's lock's, if free
        gc.collect()  # finalizes this process's copy of the parent's folder
        f.write("rows")
    # (leaving the block flushes: that fails if the number was closed under the file)
    return Path(path).read_text()


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                    reason="a worker inherits its parent's objects only when forked")
def test_a_worker_collecting_its_parents_spool_folder_touches_nothing(tmp_path):
    folder = spool_folder(str(tmp_path))
    name = folder.name
    cycle = [folder]
    cycle.append(cycle)  # garbage only the cyclic collector frees
    gc.collect()
    gc.disable()  # keep it uncollected here until the worker has run
    try:
        del folder, cycle
        with process_pool(1) as pool:
            assert pool.submit(_open_collect_write, str(tmp_path / "w.txt")).result() == "rows"
        assert Path(name).is_dir()  # the worker did not remove the parent's folder
    finally:
        gc.enable()
    gc.collect()
    assert not Path(name).exists()  # the parent's collector did
