"""Columnar outcome buffers: one row per attempt and one per logical request.

Rows are appended to plain lists (the cheapest append in CPython) and handed on in
chunks of :data:`CHUNK_ROWS` as typed numpy columns to a sink (:mod:`sim.model.sinks`:
in memory, or row groups of a Parquet spool file), so a run's memory does not grow with
the number of attempts it records.
"""

from __future__ import annotations

import numpy as np

# Re-exported: the model reads the outcome codes as rc.OK, rc.THROTTLES etc.
from ..vocabulary import (  # noqa: F401
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

ATTEMPT_COLUMNS = (
    ("request_id", np.int64), ("attempt", np.int16), ("source", np.int16),
    ("method", np.int16), ("key", np.int16), ("region", np.int16),
    ("t_send", np.float64), ("t_end", np.float64), ("outcome", np.int8),
    ("cu_reserved", np.float64), ("cu_settled", np.float64),
    ("retry_after_s", np.float64), ("phantom", np.bool_), ("stream_wait_s", np.float64),
)
REQUEST_COLUMNS = (
    ("request_id", np.int64), ("source", np.int16), ("method", np.int16),
    ("t_first", np.float64), ("t_end", np.float64), ("outcome", np.int8),
    ("attempts", np.int16),
)

#: Rows buffered before a chunk goes to the sink (about 6 MB of boxed attempt values).
CHUNK_ROWS = 1 << 15


class Recorder:
    """Appends attempt and logical-request rows and hands them to sinks in chunks.

    ``on_chunk(attempts)`` (optional) sees every attempt chunk first, for running
    aggregates. :meth:`close` flushes the last partial chunks.
    """

    def __init__(self, attempts=None, requests=None, on_chunk=None,
                 chunk_rows: int = CHUNK_ROWS) -> None:
        self.attempt_sink = attempts if attempts is not None else MemorySink(ATTEMPT_COLUMNS)
        self.request_sink = requests if requests is not None else MemorySink(REQUEST_COLUMNS)
        self._on_chunk = on_chunk
        self.chunk_rows = chunk_rows
        self._handshakes: tuple[list, ...] = tuple([] for _ in range(8))
        # One list per column, emptied in place at each flush, so that a caller may bind
        # the appends once (:attr:`attempt_appends`) and write rows without a call per row.
        self.attempt_cols: tuple[list, ...] = tuple([] for _ in ATTEMPT_COLUMNS)
        self.attempt_appends = tuple(col.append for col in self.attempt_cols)
        self.request_cols: tuple[list, ...] = tuple([] for _ in REQUEST_COLUMNS)
        self.request_appends = tuple(col.append for col in self.request_cols)

    def attempt(self, rid, attempt, source, method, key, region, t_send, t_end, outcome,
                reserved, settled, retry_after, phantom, stream_wait) -> None:
        """Record one attempt (``retry_after`` is NaN when the reply carried none)."""
        a = self.attempt_appends
        a[0](rid); a[1](attempt); a[2](source); a[3](method); a[4](key); a[5](region)
        a[6](t_send); a[7](t_end); a[8](outcome); a[9](reserved); a[10](settled)
        a[11](retry_after); a[12](phantom); a[13](stream_wait)
        if len(self.attempt_cols[0]) >= self.chunk_rows:
            self._flush_attempts()

    def request(self, rid, source, method, t_first, t_end, outcome, attempts) -> None:
        """Record a logical request once it has its final outcome."""
        r = self.request_appends
        r[0](rid); r[1](source); r[2](method); r[3](t_first); r[4](t_end); r[5](outcome)
        r[6](attempts)
        if len(self.request_cols[0]) >= self.chunk_rows:
            self._flush_requests()

    def flush(self) -> None:
        """Hand on the rows of whichever table has a full chunk: for a caller that
        appends through :attr:`attempt_appends` and :attr:`request_appends` and calls
        this as soon as the first column of either reaches :attr:`chunk_rows`."""
        if len(self.attempt_cols[0]) >= self.chunk_rows:
            self._flush_attempts()
        if len(self.request_cols[0]) >= self.chunk_rows:
            self._flush_requests()

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
        attempt = self.attempt
        for i, (source, method, key, region, t, outcome, cu, retry_after) in enumerate(
                zip(*self._handshakes, strict=True)):
            attempt(first_rid + i, 1, source, method, key, region, t, t, outcome, cu, cu,
                    retry_after, False, 0.0)
        self._handshakes = tuple([] for _ in self._handshakes)

    def _flush_attempts(self) -> None:
        if not self.attempt_cols[0]:
            return
        n = len(self.attempt_cols[0])
        chunk = {name: np.fromiter(col, dtype=dt, count=n)  # faster than asarray from a list
                 for (name, dt), col in zip(ATTEMPT_COLUMNS, self.attempt_cols, strict=True)}
        for col in self.attempt_cols:
            col.clear()
        if self._on_chunk is not None:
            self._on_chunk(chunk)
        self.attempt_sink.write(chunk)

    def _flush_requests(self) -> None:
        if not self.request_cols[0]:
            return
        n = len(self.request_cols[0])
        chunk = {name: np.fromiter(col, dtype=dt, count=n)  # faster than asarray from a list
                 for (name, dt), col in zip(REQUEST_COLUMNS, self.request_cols, strict=True)}
        for col in self.request_cols:
            col.clear()
        self.request_sink.write(chunk)

    def close(self, handshake_rid: int = 0) -> None:
        """Flush what is buffered and close the sinks; handshake rows are numbered from
        ``handshake_rid`` (the first id no logical request took)."""
        self._write_handshakes(handshake_rid)
        self._flush_attempts()
        self._flush_requests()
        self.attempt_sink.close()
        self.request_sink.close()

    def arrays(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """``(attempts, requests)`` as dicts of typed numpy columns (after :meth:`close`)."""
        return self.attempt_sink.read(), self.request_sink.read()
