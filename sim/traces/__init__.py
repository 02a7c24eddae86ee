"""Recorded traffic: import it into the canonical trace table, summarise it, replay it.

* :func:`import_trace` - CSV / JSONL / Parquet / HAR / request logs -> canonical Parquet
  (schema in :mod:`sim.traces.schema`), validated, keys pseudonymised.
* :func:`trace_stats` / :func:`render_stats` - per-window demand and the smallest tier.
* :func:`load_replay` -> :class:`ReplayTrace` - numpy arrays for the simulator.
* :func:`redact_text` - key redaction used throughout.
"""

from importlib import import_module

# Names resolve on first use (PEP 562), so importing one submodule (or the CLI that
# registers ``capsim trace``) does not load pyarrow and every importer with it.
_WHERE = {
    "BodyError": "bodies", "validate_rpc_envelope": "bodies", "validate_rpc_payload": "bodies",
    "validate_sizing_body": "bodies", "FORMATS": "importers", "ImportReport": "importers",
    "import_trace": "importers", "redact_text": "redaction", "scan_trace": "redaction",
    "ReplayTrace": "replay", "load_replay": "replay", "SCHEMA": "schema",
    "TRACE_VERSION": "schema", "render_stats": "stats", "trace_stats": "stats",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_WHERE[name]}", __name__), name)


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
