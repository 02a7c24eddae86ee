"""The canonical trace table: one Parquet file, one row per request as recorded.

Every importer (``capsim trace import``) writes this table; ``capsim trace stats`` and
the replay loader read it. Columns, in this order:

================  ===========================  =====  =====================================
column            Arrow type                   null   meaning
================  ===========================  =====  =====================================
``time_ns``       int64                        no     request start, ns since the Unix
                                                      epoch, UTC (integers, so 12-second
                                                      window boundaries never tie on floats)
``api``           dictionary<int32, string>    no     ``rpc`` | ``search`` | ``streams``
``method``        dictionary<int32, string>    no     rpc: the JSON-RPC method as recorded
                                                      (``svc_call``, ``eth_call``);
                                                      search: ``POST /v1/size`` for sizing,
                                                      other paths as ``METHOD /path``
                                                      (credential segments as ``{key}``,
                                                      query string dropped); websocket
                                                      handshakes: the stream
                                                      (``pending-txs``, ``new-blocks``,
                                                      ``pending-logs``, api ``streams``) or
                                                      ``/v1/monitoring/unhealthy/ws`` (api
                                                      ``search``, it is served there)
``key``           dictionary<int32, string>    no     ``key-<16 hex>`` pseudonym of the API
                                                      key (:func:`sim.core.pseudonyms.pseudonym`),
                                                      never a key in clear; ``(none)`` when
                                                      the source has no key
``region``        dictionary<int32, string>    yes    regional endpoint name
``items``         int32                        yes    sizing item count (>= 0)
``profiles``      string                       yes    profile per item, comma-separated
                                                      (``fast,fast,deep``); when both are
                                                      set, the count equals ``items``
``gas_used``      int64                        yes    total gas used by the request (>= 0)
``cu``            float64                      yes    CU billed, when recorded (>= 0)
``status``        int32                        yes    observed HTTP status, or the JSON-RPC
                                                      error code (e.g. ``-32005``) when
                                                      HTTP 200 carried a JSON-RPC error
``latency_ms``    float64                      yes    observed latency (>= 0)
``body_hash``     string                       yes    sha256 of the canonical request body,
                                                      first 16 lowercase hex digits; equal
                                                      hashes mark the same request (retries)
``notification``  bool                         yes    true for a JSON-RPC notification (no
                                                      ``id``: the server sends no reply);
                                                      optional when reading (traces written
                                                      before it existed lack it)
``retry_after_s`` float64                      yes    the ``Retry-After`` the service sent
                                                      (seconds, >= 0); optional when reading
================  ===========================  =====  =====================================

File-level key-value metadata: ``capsim.trace_version = "1"`` and
``capsim.source_file`` = the source file's base name (redacted like any text field).
Rows keep source order (they need not be sorted by time). One row group per import
chunk (``--chunk-rows``, default 500,000 rows); zstd compression.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.atomic import AtomicFile, cannot_write
from ..core.errors import CapsimError

# Re-exported: the trace modules read the vocabulary from here.
from ..core.vocabulary import (  # noqa: F401
    APIS,
    MONITORING_PATH,
    RPC,
    SEARCH,
    SIZE_METHOD,
    STREAMS,
    STREAMS_API_STREAMS,
)
from .names import DEFAULT_CHUNK_ROWS

TRACE_VERSION = "1"
META_VERSION = "capsim.trace_version"
META_SOURCE = "capsim.source_file"

WEBSOCKET_METHODS = (*STREAMS_API_STREAMS, MONITORING_PATH)
NO_KEY = "(none)"
TEXT_COLUMNS = ("method", "region", "profiles")
"""Free-text columns a key could hide in: redacted on import, scanned after writing."""

_DICT = pa.dictionary(pa.int32(), pa.string())
SCHEMA = pa.schema([
    pa.field("time_ns", pa.int64(), nullable=False),
    pa.field("api", _DICT, nullable=False),
    pa.field("method", _DICT, nullable=False),
    pa.field("key", _DICT, nullable=False),
    pa.field("region", _DICT),
    pa.field("items", pa.int32()),
    pa.field("profiles", pa.string()),
    pa.field("gas_used", pa.int64()),
    pa.field("cu", pa.float64()),
    pa.field("status", pa.int32()),
    pa.field("latency_ms", pa.float64()),
    pa.field("body_hash", pa.string()),
    pa.field("notification", pa.bool_()),
    pa.field("retry_after_s", pa.float64()),
])
COLUMNS = tuple(SCHEMA.names)
OPTIONAL_COLUMNS = ("notification", "retry_after_s")


class TraceWriter:
    """Writes canonical chunks to a temp file next to ``out``; :meth:`commit` publishes it.

    Each ``chunk_rows`` rows become one row group. Until :meth:`commit` nothing exists at
    ``out``; :meth:`discard` (also on any exception inside ``with``) removes the temp file.
    """

    def __init__(self, out: str | os.PathLike, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> None:
        self.out = Path(out)
        parent = self.out.parent if str(self.out.parent) else Path(".")
        if not parent.is_dir():
            why = ("its folder is a file, not a folder" if parent.exists() else
                   "output folder does not exist")
            raise CapsimError(f"{why}; expected a file name in an existing folder",
                              file=str(self.out), field="--out")
        if self.out.is_dir():
            raise CapsimError("expected a file name, got a folder", file=str(self.out),
                              field="--out")
        if chunk_rows < 1:
            raise CapsimError("expected a positive number of rows", field="--chunk-rows")
        self.chunk_rows = chunk_rows
        # a temporary file of its own beside `out`, locked while written: what a killed
        # import leaves is removed by the next write of `out` (sim.core.atomic)
        self._file = AtomicFile(self.out, "--out", make_parents=False).__enter__()
        self.tmp = self._file.tmp
        self.rows = 0
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        with self._writing():
            self._writer = pq.ParquetWriter(
                str(self.tmp), SCHEMA.with_metadata({META_VERSION: TRACE_VERSION}),
                compression="zstd", write_statistics=["time_ns"])

    @contextlib.contextmanager
    def _writing(self):
        """A failure to write the temporary file is the output's, not the input's."""
        try:
            yield
        except OSError as err:
            self.discard()
            raise cannot_write(self.out, err, "--out") from None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.discard()

    def write(self, table: pa.Table) -> None:
        """Append canonical rows (a table with :data:`SCHEMA`)."""
        if table.num_rows == 0:
            return
        self._buffer.append(table)
        self._buffered += table.num_rows
        with self._writing():
            while self._buffered >= self.chunk_rows:
                self._flush(self.chunk_rows)

    @property
    def buffered(self) -> int:
        """Rows written but not yet flushed to a row group."""
        return self._buffered

    def _flush(self, n: int) -> None:
        table = pa.concat_tables(self._buffer)
        head, rest = table.slice(0, n), table.slice(n)
        self._writer.write_table(head, row_group_size=n)
        self.rows += head.num_rows
        self._buffer = [rest] if rest.num_rows else []
        self._buffered = rest.num_rows

    def close(self, source_name: str) -> None:
        """Write the last partial chunk and the file metadata; the temp file is complete."""
        with self._writing():
            if self._buffered:
                self._flush(self._buffered)
            self._writer.add_key_value_metadata({META_SOURCE: source_name})
            self._writer.close()

    def commit(self) -> None:
        """Move the finished temp file onto ``out`` (atomic on one filesystem; a symbolic
        link at ``out`` is followed, not replaced)."""
        self._file.commit()

    def discard(self) -> None:
        """Drop everything written so far."""
        with contextlib.suppress(Exception):
            self._writer.close()
        self._file.discard()


def is_canonical_trace(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a Parquet file carrying capsim's trace-version metadata (any
    version): capsim's own output, which an import or a drive may overwrite."""
    try:
        meta = pq.read_metadata(path).metadata or {}
    except (OSError, pa.ArrowException):
        return False
    return META_VERSION.encode() in meta


CANONICAL_TRACE = ("a canonical capsim trace", is_canonical_trace)
"""The recogniser :func:`sim.core.outputs.claim_output` takes for a trace output."""


def open_trace(path: str | os.PathLike) -> pq.ParquetFile:
    """Open a canonical trace for reading, checking its version and columns."""
    label = str(path)
    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError:
        raise CapsimError("no such file", file=label) from None
    except (OSError, pa.ArrowException):
        raise CapsimError("not a Parquet file; import the source with `capsim trace import` "
                          "first", file=label) from None
    meta = pf.metadata.metadata or {}
    version = meta.get(META_VERSION.encode())
    if version is None:
        pf.close()
        raise CapsimError("not a canonical capsim trace (no capsim.trace_version metadata); "
                          "import it with `capsim trace import` first", file=label)
    if version.decode("utf-8", "replace") != TRACE_VERSION:
        pf.close()
        raise CapsimError(f"unsupported trace version; expected {TRACE_VERSION}", file=label,
                          field=META_VERSION)
    names = set(pf.schema_arrow.names)
    missing = [c for c in COLUMNS if c not in names and c not in OPTIONAL_COLUMNS]
    if missing:
        pf.close()
        raise CapsimError(f"missing columns {', '.join(missing)}", file=label)
    return pf
