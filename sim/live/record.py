"""What ``capsim drive`` writes: a canonical trace and its sidecar of driver facts.

The canonical trace (:mod:`sim.traces.schema`) holds one row per attempt -- HTTP
requests and websocket handshakes -- with the status the client got and its latency.
Times are **service time** (wall time x the time scale) laid on the scenario's start
date: ``time_ns`` = scenario start + the emulator's service seconds, ``latency_ms`` in
service milliseconds, so a driven trace reads like a recording of the scenario.

The sidecar (``<trace stem>.live.parquet`` next to it) keeps what the canonical table
has no column for and the comparison needs (:data:`SIDECAR_COLUMNS`): per attempt the
connection it used and whether it opened it, the hostname (SNI) and protocol, the
service time its request went on the wire (``t_wire_s``: after any wait for a stream
or a new connection's TLS handshake) and the service time the emulator decided it
(``t_server_s``, from ``x-capsim-t``); and the
websocket lifecycle -- every close (``clean``, ``unclean``, ``exhausted``, ``end``)
and every billed event received (``publish``).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.atomic import AtomicFile, cannot_write
from ..core.pseudonyms import pseudonym
from ..traces.schema import SCHEMA, TraceWriter

SIDECAR_COLUMNS = {
    "row": pa.int64(),          # canonical row of an attempt; -1 for lifecycle events
    "kind": pa.string(),        # http | handshake | close | publish
    "t_s": pa.float64(),        # service time: attempt sent / event happened
    "end_s": pa.float64(),      # service time the reply arrived (attempts)
    "t_server_s": pa.float64(), # service time the emulator decided (x-capsim-t)
    "source": pa.string(),      # scenario source or stream client name
    "stream": pa.string(),      # websocket stream name ("" for HTTP)
    "rid": pa.int64(),          # logical request / websocket connection number
    "attempt": pa.int32(),
    "conn": pa.int64(),         # connection id (client port; websocket serial)
    "conn_new": pa.bool_(),     # this attempt opened its connection
    "t_wire_s": pa.float64(),   # service time its request headers were written (HTTP)
    "hostname": pa.string(),    # SNI sent ("" without SNI)
    "http2": pa.bool_(),
    "reserve_cu": pa.float64(),
    "outcome": pa.string(),     # the driver's reading of the reply (vocabulary names)
    "retry_after_s": pa.float64(),
    "close": pa.string(),       # close kind (kind == close)
}


def sidecar_path(trace: str | Path) -> Path:
    """Where the sidecar of ``trace`` lives."""
    trace = Path(trace)
    return trace.with_name(trace.stem + ".live.parquet")


def is_sidecar(path: str | Path) -> bool:
    """Whether ``path`` is a drive's sidecar (a Parquet file of exactly its columns):
    capsim's own output, which the next drive may overwrite."""
    try:
        return pq.read_schema(path).names == list(SIDECAR_COLUMNS)
    except (OSError, pa.ArrowException):
        return False


LIVE_SIDECAR = ("the sidecar of a capsim drive (.live.parquet)", is_sidecar)
"""The recogniser :func:`sim.core.outputs.claim_output` takes for a drive's sidecar."""


class DriveRecorder:
    """Rows collected during a drive, written once at the end (atomically)."""

    def __init__(self, start_ns: int) -> None:
        self.start_ns = int(start_ns)
        self._canon: dict[str, list] = {name: [] for name in SCHEMA.names}
        self._side: dict[str, list] = {name: [] for name in SIDECAR_COLUMNS}

    def __len__(self) -> int:
        return len(self._canon["time_ns"])

    def attempt(self, *, t_s: float, end_s: float, api: str, method: str, key: str,
                region: str | None, status: int | None, items: int | None = None,
                profiles: str | None = None, gas_used: int | None = None,
                cu: float | None = None, body_hash: str | None = None, kind: str,
                t_server_s: float, source: str, stream: str = "", rid: int, attempt: int,
                conn: int, conn_new: bool, hostname: str, http2: bool, reserve_cu: float,
                outcome: str, retry_after_s: float, t_wire_s: float = math.nan) -> None:
        """One attempt: a canonical row and its sidecar row."""
        row = len(self)
        c = self._canon
        c["time_ns"].append(self.start_ns + int(round(t_s * 1e9)))
        c["api"].append(api)
        c["method"].append(method)
        c["key"].append(pseudonym(key))
        c["region"].append(region)
        c["items"].append(items)
        c["profiles"].append(profiles)
        c["gas_used"].append(gas_used)
        c["cu"].append(cu)
        c["status"].append(status)
        c["latency_ms"].append(None if math.isnan(end_s) else max(0.0, (end_s - t_s) * 1e3))
        c["body_hash"].append(body_hash)
        self._side_row(row=row, kind=kind, t_s=t_s, end_s=end_s, t_server_s=t_server_s,
                       source=source, stream=stream, rid=rid, attempt=attempt, conn=conn,
                       conn_new=conn_new, t_wire_s=t_wire_s, hostname=hostname, http2=http2,
                       reserve_cu=reserve_cu, outcome=outcome, retry_after_s=retry_after_s,
                       close="")

    def outcomes(self) -> Counter:
        """Attempts by outcome (``http`` and ``handshake`` rows)."""
        return Counter(o for o, r in zip(self._side["outcome"], self._side["row"], strict=True)
                       if r >= 0)

    def event(self, *, kind: str, t_s: float, source: str, stream: str, conn: int,
              close: str = "") -> None:
        """A websocket lifecycle event (``close`` or ``publish``)."""
        nan = math.nan
        self._side_row(row=-1, kind=kind, t_s=t_s, end_s=nan, t_server_s=nan, source=source,
                       stream=stream, rid=-1, attempt=0, conn=conn, conn_new=False,
                       t_wire_s=nan, hostname="", http2=False, reserve_cu=0.0, outcome="",
                       retry_after_s=nan, close=close)

    def _side_row(self, **row) -> None:
        for name, col in self._side.items():
            col.append(row[name])

    def write(self, out: Path, source_name: str) -> Path:
        """Write the canonical trace at ``out`` and the sidecar next to it."""
        cols = dict(self._canon)
        arrays = []
        for field in SCHEMA:
            typ = field.type
            base = typ.value_type if pa.types.is_dictionary(typ) else typ
            values = cols[field.name] if cols[field.name] else [None] * len(self)
            arr = pa.array(values, base)  # columns the driver has nothing for are null
            arrays.append(arr.dictionary_encode() if pa.types.is_dictionary(typ) else arr)
        table = pa.Table.from_arrays(arrays, schema=SCHEMA)
        with TraceWriter(out) as writer:
            writer.write(table)
            writer.close(source_name)
            writer.commit()
        side = pa.table({n: pa.array(v, t) for (n, t), v in
                         zip(SIDECAR_COLUMNS.items(), self._side.values(), strict=True)})
        path = sidecar_path(out)
        with AtomicFile(path, "--out") as f:
            try:
                pq.write_table(side, f.tmp)
            except OSError as err:
                raise cannot_write(path, err, "--out") from None
            f.commit()
        return path
