"""Recorded traffic: import it into the canonical trace table, summarise it, replay it.

* :func:`import_trace` - CSV / JSONL / Parquet / HAR / request logs -> canonical Parquet
  (schema in :mod:`sim.traces.schema`), validated, keys pseudonymised.
* :func:`trace_stats` / :func:`render_stats` - per-window demand and the smallest tier.
* :func:`load_replay` -> :class:`ReplayTrace` - numpy arrays for the simulator.
* :func:`redact_text` - key redaction used throughout.
"""

from .bodies import BodyError, validate_rpc_envelope, validate_rpc_payload, validate_sizing_body
from .importers import FORMATS, ImportReport, import_trace
from .redaction import redact_text, scan_trace
from .replay import ReplayTrace, load_replay
from .schema import SCHEMA, TRACE_VERSION
from .stats import render_stats, trace_stats

__all__ = [
    "FORMATS",
    "SCHEMA",
    "TRACE_VERSION",
    "BodyError",
    "ImportReport",
    "ReplayTrace",
    "import_trace",
    "load_replay",
    "redact_text",
    "render_stats",
    "scan_trace",
    "trace_stats",
    "validate_rpc_envelope",
    "validate_rpc_payload",
    "validate_sizing_body",
]
