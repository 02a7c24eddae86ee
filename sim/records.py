"""A run's attempt records: spooled per tier, read on demand, written in row groups.

Each tier's run writes its attempt rows to a Parquet spool file as it goes (see
:mod:`sim.model.recorder`). :class:`AttemptRecords` owns the spool folder for as long
as the run's result lives, gives the rows as one pandas frame when asked
(:meth:`frame`, for small runs and the library user), and writes ``requests.parquet``
one row group per spooled chunk (:meth:`write_parquet`), so a report of any length is
written in constant memory.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
import weakref
from pathlib import Path

import numpy as np
import pandas as pd

from .metrics import attempt_rows
from .model.engine import TierResult
from .workload.demand import Plan

#: ``capsim run --records``: which per-row tables a report folder gets.
RECORDS = ("attempts", "windows", "none")

PARQUET_OPTIONS = {"compression": "zstd", "use_dictionary": True}
#: Rows per row group of ``requests.parquet``: large enough for zstd and the dictionaries
#: to pay (32k-row groups made the file 1.1-2x larger than pandas' snappy default).
ROW_GROUP_ROWS = 1 << 18


SPOOL_PREFIX = "capsim-spool-"
_SPOOL_LOCK = ".lock"
#: A spool folder without a lock file (made before spools had one) counts as stale when
#: untouched this long.
UNLOCKED_STALE_S = 86400.0


class SpoolFolder:
    """A private folder for a run's spool files (``name``), removed with the run's result.

    While it lives it holds an exclusive ``flock`` on its ``.lock`` file: a run killed
    before it could remove its folder leaves the folder unlocked, and the next run's
    :func:`remove_stale_spools` removes it.
    """

    def __init__(self, parent: str | None = None) -> None:
        remove_stale_spools(parent)
        tmp = tempfile.TemporaryDirectory(prefix=SPOOL_PREFIX, dir=parent)
        self.name = tmp.name
        fd = os.open(os.path.join(tmp.name, _SPOOL_LOCK), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._finalizer = weakref.finalize(self, _release, fd, tmp)

    def cleanup(self) -> None:
        """Remove the folder now (otherwise when this object is collected)."""
        self._finalizer()


def _release(fd: int, tmp: tempfile.TemporaryDirectory) -> None:
    os.close(fd)  # releases the lock
    tmp.cleanup()


def spool_folder(parent: str | None = None) -> SpoolFolder:
    """A private folder for a run's spool files, removed with the run's result; stale
    spool folders of killed runs are removed first."""
    return SpoolFolder(parent)


def remove_stale_spools(parent: str | None = None) -> list[Path]:
    """Remove the spool folders no live run holds (in ``parent``, default the system's
    temporary folder); returns them. A folder whose lock another process holds is in
    use and kept; one without a lock file is removed once untouched for a day."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(SPOOL_PREFIX + "*"):
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
    """The attempt rows of every tier of a run, in tier order."""

    def __init__(self, plan: Plan, results: list[TierResult], folder=None) -> None:
        self.plan = plan
        self.results = results
        self._folder = folder  # keeps the spool files alive as long as this object
        self.tier_names = [r.tier.name for r in results]

    def _tier(self, i: int, n: int) -> pd.Categorical:
        return pd.Categorical.from_codes(np.full(n, i, dtype=np.int8),
                                         categories=self.tier_names)

    def frames(self):
        """``requests.parquet`` rows, one frame per spooled chunk, tier by tier."""
        for i, r in enumerate(self.results):
            for chunk in r.attempt_sink.chunks():
                yield attempt_rows(chunk, self._tier(i, len(chunk["outcome"])), self.plan)

    def frame(self) -> pd.DataFrame:
        """Every attempt of the run as one frame (one row per attempt: mind the size)."""
        frames = list(self.frames())
        if not frames:
            return self._empty()
        return pd.concat(frames, ignore_index=True)

    def _empty(self) -> pd.DataFrame:
        empty = self.results[0].attempt_sink.read() if self.results else None
        if empty is None:
            from .model.recorder import ATTEMPT_COLUMNS

            empty = {n: np.empty(0, dtype=d) for n, d in ATTEMPT_COLUMNS}
        return attempt_rows({n: v[:0] for n, v in empty.items()}, self._tier(0, 0), self.plan)

    def write_parquet(self, path: str | Path) -> int:
        """Write ``requests.parquet`` in row groups of about :data:`ROW_GROUP_ROWS`
        (zstd, dictionary), a few spooled chunks at a time; returns the rows written."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        writer, rows, pending, pending_rows = None, 0, [], 0

        def flush():
            nonlocal writer, pending, pending_rows
            table = pa.concat_tables(pending).combine_chunks()
            if writer is None:
                writer = pq.ParquetWriter(str(path), table.schema, **PARQUET_OPTIONS)
            writer.write_table(table, row_group_size=max(1, len(table)))
            pending, pending_rows = [], 0

        try:
            for frame in self.frames():
                pending.append(pa.Table.from_pandas(frame, preserve_index=False))
                pending_rows += len(frame)
                rows += len(frame)
                if pending_rows >= ROW_GROUP_ROWS:
                    flush()
            if pending:
                flush()
            if writer is None:
                pending = [pa.Table.from_pandas(self._empty(), preserve_index=False)]
                flush()
        finally:
            if writer is not None:
                writer.close()
        return rows
