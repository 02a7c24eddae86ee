"""Columnar outcome buffers: one row per attempt and one per logical request.

Rows are packed into byte buffers (one ``struct`` pack per row) and handed on in
chunks of :data:`CHUNK_ROWS` as typed numpy columns to a sink (:mod:`sim.model.sinks`:
in memory, or row groups of a Parquet spool file), so a run's memory does not grow with
the number of attempts it records.
"""

from __future__ import annotations

import inspect
import struct

import numpy as np

# Re-exported: the model reads the outcome codes as rc.OK, rc.THROTTLES etc.
from ..core.vocabulary import (  # noqa: F401
    AUTH_401,
    CONN_430,
    HTTP_434,
    OK,
    OUTCOMES,
    OVERSIZED,
    PAY_402,
    PROTO_421,
    RPC_32005,
    THROTTLES,
    WS_435,
    WS_CU,
)
from .sinks import MemorySink, ParquetSink  # noqa: F401  (rc.ParquetSink in the engine)

# The row layouts, named once: every writer of rows binds its packer by these names
# (:meth:`RowFormat.packer`), every reader gets columns by them.
ATTEMPT_COLUMNS = (
    ("request_id", np.int64), ("attempt", np.int16), ("source", np.int16),
    ("method", np.int16), ("key", np.int16), ("region", np.int16),
    ("t_send", np.float64), ("t_end", np.float64), ("outcome", np.int8),
    ("cu_reserved", np.float64), ("cu_settled", np.float64),
    ("retry_after_s", np.float64), ("phantom", np.bool_), ("stream_wait_s", np.float64),
)
REQUEST_COLUMNS = (
    ("request_id", np.int64), ("source", np.int16), ("method", np.int16),
    ("key", np.int16), ("t_first", np.float64), ("t_end", np.float64), ("outcome", np.int8),
    ("attempts", np.int16),
)

#: Rows buffered before a chunk goes to the sink (2.2 MB of packed attempt rows).
CHUNK_ROWS = 1 << 15


_STRUCT_CODES = {np.int64: "q", np.int16: "h", np.int8: "b", np.float64: "d", np.bool_: "?"}


class RowFormat:
    """A table's rows packed as bytes: ``pack(*row)`` makes one (C code, no per-value
    Python object kept), :meth:`columns` turns a buffer of them into typed numpy columns.

    Packing a row into a ``bytearray`` costs a third of appending its values to one list
    per column, and the buffer converts to columns without a pass over Python objects.
    Stricter than numpy's conversion: an integer column takes only integers (a float
    there raises ``struct.error`` instead of being truncated) within its type's range.
    """

    def __init__(self, columns) -> None:
        self.columns = columns
        self.names: tuple[str, ...] = tuple(name for name, _ in columns)
        self.struct = struct.Struct("<" + "".join(_STRUCT_CODES[dt] for _, dt in columns))
        self.dtype = np.dtype([(name, np.dtype(dt).newbyteorder("<")) for name, dt in columns])
        assert self.dtype.itemsize == self.struct.size  # '<': packed, as the dtype is
        self.pack = self.struct.pack
        self.size = self.struct.size

    def packer(self, *names: str):
        """:attr:`pack` for a writer that passes a row's values in the order ``names``:
        the layout is matched by name once, when the writer binds it, so a column added,
        renamed or moved here stops every writer at start-up instead of shifting values
        into the wrong columns. (The packing itself stays one C call per row.)"""
        if names != self.names:
            raise RuntimeError(f"row layout: a writer packs {names}, the table's columns "
                               f"are {self.names}")
        return self.pack

    def columns_of(self, buf: bytes | bytearray) -> dict[str, np.ndarray]:
        """The rows in ``buf`` as contiguous, native-typed columns."""
        # From an immutable copy: a view of a bytearray exports its buffer until the view
        # dies, and a frame kept alive elsewhere (a sampling profiler, as Dask's workers
        # run, or a traceback) would keep it -- and the caller's in-place clear would fail.
        rows = np.frombuffer(bytes(buf), dtype=self.dtype)
        return {name: rows[name].astype(dt) for name, dt in self.columns}


ATTEMPT_ROW = RowFormat(ATTEMPT_COLUMNS)
REQUEST_ROW = RowFormat(REQUEST_COLUMNS)


class Recorder:
    """Collects attempt and logical-request rows and hands them to sinks in chunks.

    Rows are packed into two byte buffers (:attr:`attempt_buf` with
    ``ATTEMPT_ROW.pack``, :attr:`request_buf` with ``REQUEST_ROW.pack``). The engine
    binds both once and appends with ``buf += pack(...)`` (in place: the buffers are
    emptied in place at each flush), then calls :meth:`flush` once a buffer holds
    :attr:`chunk_bytes` of a table. ``on_chunk(attempts)`` (optional) sees every attempt
    chunk first, for running aggregates. :meth:`close` flushes the last partial chunks.
    """

    def __init__(self, attempts=None, requests=None, on_chunk=None,
                 chunk_rows: int = CHUNK_ROWS) -> None:
        self.attempt_sink = attempts if attempts is not None else MemorySink(ATTEMPT_COLUMNS)
        self.request_sink = requests if requests is not None else MemorySink(REQUEST_COLUMNS)
        self._on_chunk = on_chunk
        self.chunk_rows = chunk_rows
        self._handshakes: tuple[list, ...] = tuple([] for _ in range(8))
        self.attempt_buf = bytearray()
        self.request_buf = bytearray()
        # attempt()'s parameters are the columns' names: bound by them
        self._apack = ATTEMPT_ROW.packer(*list(inspect.signature(self.attempt).parameters))
        #: Bytes of a full chunk, per table.
        self.attempt_chunk_bytes = chunk_rows * ATTEMPT_ROW.size
        self.request_chunk_bytes = chunk_rows * REQUEST_ROW.size

    def attempt(self, request_id, attempt, source, method, key, region, t_send, t_end,
                outcome, cu_reserved, cu_settled, retry_after_s, phantom,
                stream_wait_s) -> None:
        """Record one attempt (``retry_after_s`` is NaN when the reply carried none)."""
        self.attempt_buf += self._apack(
            request_id, attempt, source, method, key, region, t_send, t_end, outcome,
            cu_reserved, cu_settled, retry_after_s, phantom, stream_wait_s)
        if len(self.attempt_buf) >= self.attempt_chunk_bytes:
            self._flush_attempts()

    def flush(self) -> None:
        """Hand on the rows of whichever table has a full chunk: for a caller that
        packs into :attr:`attempt_buf` and :attr:`request_buf` itself and calls this as
        soon as either reaches its chunk size."""
        if len(self.attempt_buf) >= self.attempt_chunk_bytes:
            self._flush_attempts()
        if len(self.request_buf) >= self.request_chunk_bytes:
            self._flush_requests()

    def add_chunk(self, attempts: bool, chunk: dict[str, np.ndarray]) -> None:
        """Hand on a chunk of rows already in columns (a writer that builds columns, as
        the compiled engine does): exactly what :meth:`flush` does with a buffer of the
        same rows -- ``on_chunk`` first for attempts, then the sink. The chunk holds
        :attr:`chunk_rows` rows (fewer only for a table's last) and every column of its
        layout in the layout's types; the byte buffers must be empty."""
        assert not (self.attempt_buf if attempts else self.request_buf)
        if attempts and self._on_chunk is not None:
            self._on_chunk(chunk)
        (self.attempt_sink if attempts else self.request_sink).write(chunk)

    def handshake(self, source, method, key, region, t, outcome, cu, retry_after) -> None:
        """Record one websocket handshake: an attempt row sent and answered at ``t``,
        reserving and settling ``cu``. Handshake rows follow every other attempt row and
        take request ids from ``close(handshake_rid=...)`` on, in the order recorded."""
        for col, v in zip(self._handshakes, (source, method, key, region, t, outcome, cu,
                                             retry_after), strict=True):
            col.append(v)

    def _write_handshakes(self, first_rid: int) -> None:
        # Through the attempt buffers, so the chunks (and the report's row groups) are
        # those of a run that had recorded them as attempts at the end.
        attempt = self.attempt  # (its arguments are ATTEMPT_COLUMNS, by name, below)
        for i, (source, method, key, region, t, outcome, cu, retry_after) in enumerate(
                zip(*self._handshakes, strict=True)):
            attempt(first_rid + i, 1, source, method, key, region, t, t, outcome, cu, cu,
                    retry_after, False, 0.0)
        self._handshakes = tuple([] for _ in self._handshakes)

    def _flush_attempts(self) -> None:
        self._flush(self.attempt_buf, ATTEMPT_ROW, self.attempt_sink, self._on_chunk)

    def _flush_requests(self) -> None:
        self._flush(self.request_buf, REQUEST_ROW, self.request_sink, None)

    @staticmethod
    def _flush(buf: bytearray, fmt: RowFormat, sink, on_chunk) -> None:
        if not buf:
            return
        chunk = fmt.columns_of(buf)
        del buf[:]  # in place: the engine holds this buffer
        if on_chunk is not None:
            on_chunk(chunk)
        sink.write(chunk)

    def close(self, handshake_rid: int = 0) -> None:
        """Flush what is buffered and close the sinks; handshake rows are numbered from
        ``handshake_rid`` (the first id no logical request took)."""
        self._write_handshakes(handshake_rid)
        self._flush_attempts()
        self._flush_requests()
        self.attempt_sink.close()
        self.request_sink.close()
