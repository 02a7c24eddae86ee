"""A runnable scenario proposed from a canonical trace (``capsim init --trace``).

Filled in from the trace's summary (:func:`sim.traces.stats.trace_stats`): the start
(the first recorded second, UTC), the duration (the recording's span, to the next whole
minute), the account's keys (the trace's key pseudonyms: the clear keys never reach a
trace), the regions seen, the tiers that serve every API the trace uses, and one replay
source with a ``method_map`` proposed for every recorded JSON-RPC method that is not a
method of the scenario (:func:`propose_method_map`). Everything proposed is commented
as such: the user reads it, then runs it.
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path

from ..config.tiers import CATALOG
from .schema import WEBSOCKET_METHODS

SCENARIO_METHODS = ("svc_call", "svc_pendingBlock")
"""The service's own RPC methods (``[methods]`` defaults): a recorded method of that
name replays as itself."""

HEAD_QUERIES = frozenset({
    "eth_blockNumber", "eth_chainId", "net_version", "eth_syncing", "web3_clientVersion",
    "eth_gasPrice", "eth_maxPriorityFeePerGas", "net_listening", "net_peerCount",
})
"""Cheap chain-head queries: proposed as ``svc_pendingBlock`` (the service's unbilled
head query, spec 4.6); any other recorded method is proposed as ``svc_call`` (billed)."""


def propose_method_map(rpc_methods: dict[str, int]) -> dict[str, str]:
    """For each recorded JSON-RPC method not of the service, the service method proposed
    for it: head queries (:data:`HEAD_QUERIES`, or a name with ``blockNumber``) as
    ``svc_pendingBlock``, everything else as ``svc_call``."""
    out = {}
    for name in sorted(rpc_methods):
        if name in SCENARIO_METHODS:
            continue
        head = name in HEAD_QUERIES or "blockNumber" in name
        out[name] = "svc_pendingBlock" if head else "svc_call"
    return out


def _toml_str(text: str) -> str:
    # A JSON string is a TOML basic string (same escapes for what a trace can hold).
    return json.dumps(text, ensure_ascii=False)


def _duration(span_s: float) -> str:
    minutes = max(1, math.ceil((span_s + 1.0) / 60.0))
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    if minutes % 60 == 0:
        return f"{minutes // 60}h"
    return f"{minutes}m"


def _rpc_methods(methods: dict[str, int]) -> dict[str, int]:
    return {m: n for m, n in methods.items() if " " not in m and m not in WEBSOCKET_METHODS}


def scenario_from_trace(trace: str | os.PathLike, scenario: str | os.PathLike,
                        stats: dict | None = None) -> str:
    """The TOML text of a scenario at ``scenario`` replaying the canonical ``trace``
    (``stats``: its :func:`~sim.traces.stats.trace_stats`, computed when not given)."""
    from .stats import trace_stats

    stats = stats if stats is not None else trace_stats(trace)
    scenario = Path(scenario)
    name = scenario.stem
    rel = os.path.relpath(Path(trace).absolute(), scenario.absolute().parent)
    counts = stats["counts"]
    keys = list(counts["key"]) or ["recorded-key"]
    regions = list(counts["region"]) or ["default"]
    apis = set(counts["api"])
    tiers = [t.name for t in CATALOG if apis <= t.apis]
    time = stats.get("time") or {}
    first_ns = time.get("first_ns")
    start = (datetime.fromtimestamp(first_ns // 1_000_000_000, UTC) if first_ns is not None
             else datetime(2026, 1, 5, tzinfo=UTC))
    span = float(time.get("span_s") or 0.0)
    rpc = _rpc_methods(counts["method"])
    method_map = propose_method_map(rpc)
    peak = stats.get("peak") or {}
    rec = stats.get("recommended_tier") or {}

    lines = [
        f"# Proposed by `capsim init --trace` from {Path(trace).name}: "
        f"{stats['rows']:,} recorded row(s) over {span:,.1f} s.",
        "# Read it before you trust it: the regions' round trips, the SLO and the method",
        "# map below are proposals. Every key: docs/reference/scenario.md.",
    ]
    if peak:
        lines.append(f"# Recorded peak window: {peak['cu']:,.1f} CU ({peak['requests']:,} "
                     f"requests) at {peak['window_start']}; smallest tier covering it: "
                     f"{rec.get('name', 'none')}.")
    lines += [
        "",
        f"name = {_toml_str(name)}",
        f"start = {start.strftime('%Y-%m-%dT%H:%M:%SZ')}   # the first recorded second",
        f"duration = \"{_duration(span)}\"   # the recording's span, to the next minute",
        "# The tiers serving every API the trace uses (" + ", ".join(sorted(apis)) + "):",
        "tiers = [" + ", ".join(_toml_str(t) for t in tiers) + "]",
        "",
        "[account]",
        "# The trace's keys, as the pseudonyms the import replaced them with.",
        "keys = [" + ", ".join(_toml_str(k) for k in keys) + "]",
        "",
    ]
    for region in regions:
        lines += ["[[regions]]", f"name = {_toml_str(region)}",
                  "rtt_ms = 20   # proposed: put your measured round trip here", ""]
    lines += [
        "[[sources]]",
        "name = \"recorded\"",
        f"key = {_toml_str(keys[0])}",
        f"trace = {_toml_str(Path(rel).as_posix())}",
    ]
    if method_map:
        lines += [
            "",
            "[sources.replay]",
            "# Recorded JSON-RPC methods that are not this service's, replayed as the one",
            "# proposed (head queries as svc_pendingBlock, the rest as svc_call); price one",
            "# yourself under [pricing.rpc.method_cu] and map it to its own name instead.",
            "[sources.replay.method_map]",
        ]
        lines += [f"{_toml_str(m)} = {_toml_str(t)}   # {rpc[m]:,} row(s)"
                  for m, t in method_map.items()]
    ws = int(stats.get("websocket_handshakes") or 0)
    if ws:
        lines += ["", f"# The trace holds {ws:,} websocket handshake(s): they are not "
                  "replayed; model", "# the streams with [[streams]] "
                  "(docs/reference/scenario.md)."]
    lines += ["", "[slo]", "max_throttle_rate = 0.01", "max_failure_rate = 0.001",
              "p99_latency_ms = 2000", ""]
    return "\n".join(lines)
