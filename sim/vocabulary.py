"""The service's vocabulary, defined once: APIs, method and stream names, outcome codes,
time constants and the named random streams.

Everything else (tiers, traces, configuration, model, metrics) imports these names from
here. Plain constants, no imports: this module sits at the bottom of the layers.
"""

from __future__ import annotations

# -- APIs (spec 2) -----------------------------------------------------------------------

RPC, SEARCH, STREAMS = "rpc", "search", "streams"
APIS = (RPC, SEARCH, STREAMS)
"""The three APIs, in the order tables and reports list them."""

# -- methods and streams -----------------------------------------------------------------

SIZE_METHOD = "POST /v1/size"
"""The Search API's sizing call (its CU cost depends on the items sized)."""

STREAMS_API_STREAMS: tuple[str, ...] = ("pending-txs", "new-blocks", "pending-logs")
"""The Streams API's three websocket paths."""
MONITORING = "monitoring"
"""The Search API's monitoring websocket, as a stream name."""
MONITORING_PATH = "/v1/monitoring/unhealthy/ws"
"""The monitoring websocket's request path."""
STREAM_NAMES: tuple[str, ...] = (*STREAMS_API_STREAMS, MONITORING)
"""Every websocket a scenario's ``[[streams]]`` client may open."""
STREAM_API: dict[str, str] = {**dict.fromkeys(STREAMS_API_STREAMS, STREAMS), MONITORING: SEARCH}
"""The API a stream belongs to; a tier without it refuses the handshake with 402."""

# -- outcomes ----------------------------------------------------------------------------

OUTCOMES = ("ok", "434", "-32005", "402", "401", "oversized", "421", "430", "435",
            "ws_cu_rejected")
"""Outcome names; attempts store the index. HTTP statuses and the JSON-RPC code as text."""
OK, HTTP_434, RPC_32005, PAY_402, AUTH_401, OVERSIZED, PROTO_421, CONN_430, WS_435, WS_CU = \
    range(len(OUTCOMES))
THROTTLES = (HTTP_434, RPC_32005, WS_CU)
"""Outcomes caused by the 12-second CU window."""
HANDSHAKE_OUTCOMES = ("ok", "435", "ws_cu_rejected", "401", "402")
"""The outcomes a websocket handshake can have (a subset of :data:`OUTCOMES`)."""
CLOSE_KINDS = ("clean", "unclean", "exhausted", "end")
"""How a websocket session ended: a clean close (planned session end or a clean drop),
an unclean drop, closed by the service for CU exhaustion, still open at the end."""

# -- time --------------------------------------------------------------------------------

WINDOW_S = 12.0
"""The CU budget's window (spec 8.1)."""
HOUR_S = 3_600.0
DAY_S = 86_400.0
"""A UTC day: the daily allowance's period."""
