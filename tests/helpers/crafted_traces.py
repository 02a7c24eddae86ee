"""Canonical traces written row by row, for tests that craft the traffic themselves."""

from __future__ import annotations

from sim.traces.canonical import finalize
from sim.traces.redaction import KeyRegistry
from sim.traces.schema import COLUMNS, TraceWriter

S = 1_000_000_000
T0 = 1_714_564_800 * S  # 2024-05-01T12:00:00Z, a multiple of 12 s
KEY = "3f9a2c71d04e4b8e9a6c15f2b7d08e43"


def write_trace(path, rows, chunk_rows=1000, source="test"):
    """A canonical trace at ``path`` from row dicts: time in seconds after :data:`T0`
    under ``t``; ``api``, ``method`` and ``key`` default to an RPC ``svc_call`` on
    :data:`KEY`."""
    cols = {name: [] for name in COLUMNS}
    for r in rows:
        full = {"api": "rpc", "method": "svc_call", "key": KEY, **r}
        full["time_ns"] = T0 + round(full.pop("t") * S)
        for name in COLUMNS:
            cols[name].append(full.get(name))
    with TraceWriter(path, chunk_rows) as writer:
        writer.write(finalize(cols, KeyRegistry()))
        writer.close(source)
        writer.commit()
    return path
