"""Where a recorder's chunks go: kept in memory, or written as row groups of a Parquet
spool file. Both read back whole (:meth:`read`) or chunk by chunk (:meth:`chunks`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: How a spool file is written. It is read back once or twice and then deleted, so what
#: counts is the workers' CPU: LZ4 without dictionaries writes a chunk in about a third
#: of the time zstd with dictionaries takes (``benchmarks/bench_spool.py``), at about
#: the same size (rows of floats and small codes).
SPOOL_OPTIONS = {"compression": "lz4", "use_dictionary": False}


def _empty(columns) -> dict[str, np.ndarray]:
    return {name: np.empty(0, dtype=dt) for name, dt in columns}


class MemorySink:
    """Keeps the chunks in memory; :meth:`read` concatenates them."""

    def __init__(self, columns) -> None:
        self.columns = columns
        self._chunks: list[dict[str, np.ndarray]] = []

    def write(self, chunk: dict[str, np.ndarray]) -> None:
        self._chunks.append(chunk)

    def close(self) -> None:
        pass

    def read(self, names: list[str] | None = None) -> dict[str, np.ndarray]:
        """Whole columns (``names``, default all) as numpy arrays."""
        names = names or [n for n, _ in self.columns]
        if not self._chunks:
            return {n: v for n, v in _empty(self.columns).items() if n in names}
        return {n: np.concatenate([c[n] for c in self._chunks]) for n in names}

    def chunks(self, names: list[str] | None = None):
        """The chunks in order, each a dict of numpy columns."""
        names = names or [n for n, _ in self.columns]
        for c in self._chunks:
            yield {n: c[n] for n in names}


class ParquetSink:
    """Writes each chunk as a row group of a Parquet spool file (:data:`SPOOL_OPTIONS`).

    Picklable once closed (only the path travels), so a worker process can hand it back.
    """

    def __init__(self, columns, path: str | Path) -> None:
        self.columns = columns
        self.path = str(path)
        self._writer = None

    def __getstate__(self):
        return {"columns": self.columns, "path": self.path, "_writer": None}

    def _schema(self):
        import pyarrow as pa

        return pa.schema([(n, pa.from_numpy_dtype(np.dtype(dt))) for n, dt in self.columns])

    def write(self, chunk: dict[str, np.ndarray]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, self._schema(), **SPOOL_OPTIONS)
        table = pa.Table.from_arrays([chunk[n] for n, _ in self.columns],
                                     schema=self._schema())
        self._writer.write_table(table)

    def close(self) -> None:
        import pyarrow.parquet as pq

        if self._writer is None:  # no rows: still a valid, empty file
            self._writer = pq.ParquetWriter(self.path, self._schema(), **SPOOL_OPTIONS)
        self._writer.close()
        self._writer = None

    def read(self, names: list[str] | None = None) -> dict[str, np.ndarray]:
        """Whole columns (``names``, default all) as numpy arrays."""
        import pyarrow.parquet as pq

        names = names or [n for n, _ in self.columns]
        table = pq.read_table(self.path, columns=names)
        dtypes = dict(self.columns)
        return {n: table.column(n).to_numpy().astype(dtypes[n], copy=False) for n in names}

    def chunks(self, names: list[str] | None = None):
        """The row groups in order, each a dict of numpy columns."""
        import pyarrow.parquet as pq

        names = names or [n for n, _ in self.columns]
        dtypes = dict(self.columns)
        f = pq.ParquetFile(self.path)
        for i in range(f.num_row_groups):
            t = f.read_row_group(i, columns=names)
            yield {n: t.column(n).to_numpy().astype(dtypes[n], copy=False) for n in names}
