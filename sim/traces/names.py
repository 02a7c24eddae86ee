"""What ``capsim trace`` needs before any trace library loads: the import formats and the
default chunk size. No imports, so registering the command loads no pyarrow."""

from __future__ import annotations

FORMATS = ("csv", "jsonl", "parquet", "har", "rpc-log", "size-log")
"""``--format`` names (besides ``auto``); the readers are in :mod:`sim.traces.importers`."""
DEFAULT_CHUNK_ROWS = 500_000
"""Rows validated and written at a time (memory is bounded by it)."""
