"""A run's attempt records: spooled per tier, read on demand, written in row groups.

Each tier's run writes its attempt rows to a Parquet spool file as it goes (see
:mod:`sim.model.recorder`). :class:`AttemptRecords` owns the spool folder for as long
as the run's result lives, gives the rows as one pandas frame when asked
(:meth:`frame`, for small runs and the library user), and writes ``requests.parquet``
in row groups of a few spooled chunks (:meth:`write_parquet`; Arrow tables built from the
spooled columns, no pandas frame), so a report of any length is written in constant memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.workers import hold_lock_fd, release_lock_fd
from ..metrics.tables import AttemptTables, attempt_rows
from ..model.engine import TierResult
from ..workload.demand import Plan

#: ``capsim run --records``: which per-row tables a report folder gets.
RECORDS = ("attempts", "windows", "none")

PARQUET_OPTIONS = {"compression": "zstd", "use_dictionary": True}
#: Rows per row group of ``requests.parquet``: large enough for zstd and the dictionaries
#: to pay (32k-row groups made the file 1.1-2x larger than pandas' snappy default).
ROW_GROUP_ROWS = 1 << 18


SPOOL_PREFIX = "capsim-spool-"
_MAKING_PREFIX = "capsim-making-"
_SPOOL_LOCK = ".lock"
#: A spool folder without a lock file (made before spools had one) counts as stale when
#: untouched this long.
UNLOCKED_STALE_S = 86400.0


#: A folder still named ``capsim-making-*`` this long, its lock free, is a killed run's.
MAKING_STALE_S = 60.0


def _unlocked(folder: Path) -> bool:
    """Whether ``folder``'s lock file exists and no process holds it."""
    try:
        fd = os.open(folder / _SPOOL_LOCK, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


class SpoolFolder:
    """A private folder for a run's spool files (``name``), removed with the run's result.

    While it lives it holds an exclusive ``flock`` on its ``.lock`` file: a run killed
    before it could remove its folder leaves the folder unlocked, and the next run's
    :func:`remove_stale_spools` removes it.
    """

    def __init__(self, parent: str | None = None) -> None:
        remove_stale_spools(parent)
        # The folder is made and locked under a name the sweep of stale spools does not
        # match, then renamed: another run's sweep can never see it unlocked (it did,
        # between the lock file's creation and its flock, and removed a live run's spool).
        making = tempfile.mkdtemp(prefix=_MAKING_PREFIX, dir=parent)
        fd = os.open(os.path.join(making, _SPOOL_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        hold_lock_fd(fd)  # worker processes close their copy
        name = tempfile.mkdtemp(prefix=SPOOL_PREFIX, dir=parent)  # a free name, taken
        os.rmdir(name)
        os.rename(making, name)
        self.name = name
        # A forked worker inherits this object: if its garbage collector finalizes it
        # there, the folder and the lock are still the parent's (the worker's copy of
        # the lock was closed at its start, and that number may be a file of its own).
        self._finalizer = weakref.finalize(self, _release, os.getpid(), fd, name)

    def cleanup(self) -> None:
        """Remove the folder now (otherwise when this object is collected)."""
        self._finalizer()


def _release(owner: int, fd: int, name: str) -> None:
    if os.getpid() != owner:  # a worker's inherited copy (see SpoolFolder.__init__)
        return
    release_lock_fd(fd)
    os.close(fd)  # releases the lock
    shutil.rmtree(name, ignore_errors=True)


def spool_folder(parent: str | None = None) -> SpoolFolder:
    """A private folder for a run's spool files, removed with the run's result; stale
    spool folders of killed runs are removed first."""
    return SpoolFolder(parent)


def remove_stale_spools(parent: str | None = None) -> list[Path]:
    """Remove the spool folders no live run holds (in ``parent``, default the system's
    temporary folder); returns them. A folder whose lock another process holds is in
    use and kept; one without a lock file is removed once untouched for a day."""
    removed = []
    where = Path(parent or tempfile.gettempdir())
    for folder in where.glob(_MAKING_PREFIX + "*"):  # a run killed while making its spool
        with contextlib.suppress(OSError):
            age = time.time() - folder.stat().st_mtime
            # A making folder lives microseconds: one a minute old whose lock nobody
            # holds is a killed run's (it stayed a day, a .lock in the temporary folder).
            if age >= UNLOCKED_STALE_S or (age >= MAKING_STALE_S and _unlocked(folder)):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    for folder in where.glob(SPOOL_PREFIX + "*"):
        if folder.is_symlink() or not folder.is_dir():
            continue
        lock = folder / _SPOOL_LOCK
        try:
            if not lock.exists():
                if time.time() - folder.stat().st_mtime < UNLOCKED_STALE_S:
                    continue
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
                continue
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            continue  # gone meanwhile, or not ours to open
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run's
        else:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            os.close(fd)
    return removed


class AttemptRecords:
    """The attempt rows of every tier of a run, in tier order.

    ``written``: a ``requests.parquet`` already written from these rows (by
    :class:`RequestsWriter` while the run went on), which :meth:`write_parquet` then
    copies instead of writing again.
    """

    def __init__(self, plan: Plan, results: list[TierResult], folder=None,
                 written: tuple[Path, int] | None = None, kept: bool = True) -> None:
        self.plan = plan
        self.results = results
        self._folder = folder  # keeps the spool files alive as long as this object
        self.tier_names = [r.tier.name for r in results]
        self._written = written
        self._closed = False
        self._kept = kept  # False: each tier's rows were removed once summarised

    def close(self) -> None:
        """Remove the spool folder now (see :meth:`sim.runner.run.RunOutput.close`)."""
        self._closed = True
        if self._folder is not None:
            self._folder.cleanup()

    def _check_open(self) -> None:
        if not self._kept:
            raise RuntimeError("this run kept no attempt rows (keep_rows=False: each "
                               "tier's were removed once its summary was read)")
        if self._closed:
            raise RuntimeError("the run's output was closed: its attempt rows are gone "
                               "(read them, or write the report, before closing it)")

    @property
    def written(self) -> Path | None:
        """The ``requests.parquet`` written while the run went on, if any."""
        return None if self._written is None else self._written[0]

    def frames(self):
        """``requests.parquet`` rows, one frame per spooled chunk, tier by tier."""
        self._check_open()
        for i, r in enumerate(self.results):
            yield from tier_frames(self.plan, self.tier_names, i, r)

    def frame(self) -> pd.DataFrame:
        """Every attempt of the run as one frame (one row per attempt: mind the size)."""
        frames = list(self.frames())
        if not frames:
            return self._empty()
        return pd.concat(frames, ignore_index=True)

    def _empty(self) -> pd.DataFrame:
        return empty_frame(self.plan, self.tier_names, self.results[0] if self.results else None)

    def write_parquet(self, path: str | Path) -> int:
        """Write ``requests.parquet`` in row groups of about :data:`ROW_GROUP_ROWS`
        (zstd, dictionary), a few spooled chunks at a time; returns the rows written."""
        self._check_open()
        if self._written is not None and self._written[0].exists():
            _link_or_copy(self._written[0], Path(path))
            return self._written[1]
        with RequestsWriter(path, self.plan, self.tier_names) as writer:
            for i, r in enumerate(self.results):
                writer.add_tier(i, r)
            return writer.close()


def drop_tier_rows(result: TierResult) -> None:
    """Remove a tier's spooled attempt and request rows (its summary and frames read)."""
    for sink in (result.attempt_sink, result.request_sink):
        path = getattr(sink, "path", None)  # (an in-memory sink has none)
        if path is not None:
            Path(path).unlink(missing_ok=True)


def _link_or_copy(src: Path, dst: Path) -> None:
    # A hard link when both are on one file system: the copy costs nothing, and the
    # spool folder's removal leaves the report's file whole.
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def tier_frames(plan: Plan, tier_names: list[str], i: int, result: TierResult):
    """Tier ``i``'s ``requests.parquet`` rows, one frame per spooled chunk."""
    for chunk in result.attempt_sink.chunks():
        yield attempt_rows(chunk, i, tier_names, plan)


def empty_frame(plan: Plan, tier_names: list[str], result: TierResult | None) -> pd.DataFrame:
    """``requests.parquet``'s columns without rows."""
    empty = result.attempt_sink.read() if result is not None else None
    if empty is None:
        from ..model.recorder import ATTEMPT_COLUMNS

        empty = {n: np.empty(0, dtype=d) for n, d in ATTEMPT_COLUMNS}
    return attempt_rows({n: v[:0] for n, v in empty.items()}, 0, tier_names, plan)


class RequestsWriter:
    """Writes ``requests.parquet`` tier by tier (:meth:`add_tier`, in tier order) in row
    groups of about :data:`ROW_GROUP_ROWS` (zstd, dictionary), so a run with worker
    processes can write each tier's rows as soon as that tier is done; :meth:`close`
    writes the last row group. The row groups do not depend on when tiers are added.
    Used as a context manager, the file is closed as it is if the block fails.
    """

    def __init__(self, path: str | Path, plan: Plan, tier_names: list[str]) -> None:
        self.path, self.plan, self.tier_names = Path(path), plan, tier_names
        self.rows = 0
        self._writer = None
        self._pending: list = []
        self._pending_rows = 0
        self._first: TierResult | None = None  # whose spool gives an empty file's columns
        self._tables = AttemptTables(plan, tier_names)

    def __enter__(self) -> RequestsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.abort()  # after close() there is nothing left to close

    def add_tier(self, i: int, result: TierResult) -> None:
        """Tier ``i``'s rows (full row groups are written; the rest waits for more)."""
        if self._first is None:
            self._first = result

        for chunk in result.attempt_sink.chunks():
            n = len(chunk["outcome"])
            if n == 0:
                continue
            self._pending.append(self._tables.table(chunk, i))
            self._pending_rows += n
            self.rows += n
            if self._pending_rows >= ROW_GROUP_ROWS:
                self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.concat_tables(self._pending).combine_chunks()
        if self._writer is None:
            self._writer = pq.ParquetWriter(str(self.path), table.schema, **PARQUET_OPTIONS)
        self._writer.write_table(table, row_group_size=max(1, len(table)))
        self._pending, self._pending_rows = [], 0

    def close(self) -> int:
        """Write what is pending (a file of no rows still has the columns) and close the
        file; returns the rows written."""
        import pyarrow as pa

        try:
            if self._pending:
                self._flush()
            if self._writer is None:
                self._pending = [pa.Table.from_pandas(
                    empty_frame(self.plan, self.tier_names, self._first),
                    preserve_index=False)]
                self._flush()
        finally:
            self.abort()
        return self.rows

    def abort(self) -> None:
        """Close the file as it is (after a failure)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
