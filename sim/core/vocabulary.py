"""The service's vocabulary, defined once: APIs, method and stream names, outcome codes,
time constants and the named random streams.

Everything else (tiers, traces, configuration, model, metrics) imports these names from
here. Plain constants (the status tables read off :data:`OUTCOME_STATUS`, one function to
read a status, one string enum), nothing imported but the standard library's ``enum``:
this module sits at the bottom of the layers.
"""

from __future__ import annotations

from enum import StrEnum, unique

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
"""Throttled: the outcomes of a refusal by the 12-second CU window (an HTTP 434, a
JSON-RPC -32005, a handshake refused for CU). The limiter's own word for it is
:data:`sim.policy.limiter.THROTTLED`; :data:`THROTTLE_STATUSES` are the statuses."""
LIMIT_REFUSALS = (HTTP_434, RPC_32005, CONN_430, WS_435, WS_CU)
"""Refused by a limit: the outcomes of a refusal by one of the account's limits that a
client can wait out (the CU window, connections 430, websocket slots 435); what clients
retry by default. A wider set than :data:`THROTTLES`."""
HANDSHAKE_OUTCOMES = ("ok", "435", "ws_cu_rejected", "401", "402")
"""The outcomes a websocket handshake can have (a subset of :data:`OUTCOMES`)."""

# -- statuses: the one outcome <-> status table, and its readings -----------------------

OUTCOME_STATUS: dict[int, int] = {
    OK: 200, HTTP_434: 434, RPC_32005: -32005, PAY_402: 402, AUTH_401: 401, OVERSIZED: 413,
    PROTO_421: 421, CONN_430: 430, WS_435: 435, WS_CU: 434}
"""The status each outcome is answered with, as a trace records it: the HTTP status; for
``-32005`` the JSON-RPC error code (the reply itself is an HTTP 200); for a handshake
refused for CU 434, like an HTTP endpoint (spec 7). An accepted handshake is 101
(:data:`HANDSHAKE_STATUS_OUTCOME`). Every status table below is read off this one."""
HTTP_STATUS_OUTCOME: dict[int, str] = {
    OUTCOME_STATUS[o]: name for o, name in enumerate(OUTCOMES) if o != WS_CU}
"""The outcome an HTTP attempt's status (or, for a JSON-RPC error, its code) stands for."""
HANDSHAKE_STATUS_OUTCOME: dict[int, str] = {
    (101 if name == "ok" else OUTCOME_STATUS[OUTCOMES.index(name)]): name
    for name in HANDSHAKE_OUTCOMES}
"""The outcome a websocket handshake's status stands for (a CU refusal is answered 434)."""
RECORDED_HANDSHAKE_STATUS_OUTCOME: dict[int, str] = {**HANDSHAKE_STATUS_OUTCOME, 200: "ok"}
"""As :data:`HANDSHAKE_STATUS_OUTCOME`, for a recording, which may show an accepted
handshake as 200 (a websocket over HTTP/2, RFC 8441)."""
THROTTLE_STATUSES: tuple[int, ...] = tuple(dict.fromkeys(OUTCOME_STATUS[o] for o in THROTTLES))
"""The statuses of a throttled attempt as a client records them: 434, -32005 (a handshake
refused for CU is answered 434 too)."""
LIMIT_STATUSES: tuple[int, ...] = tuple(dict.fromkeys(OUTCOME_STATUS[o] for o in LIMIT_REFUSALS))
"""The statuses of :data:`LIMIT_REFUSALS` (434, -32005, 430, 435): what a trace replay
takes as the cause of a recorded retry."""


def status_outcome(status: int) -> str | None:
    """The outcome name a recorded status stands for, HTTP or handshake (None: neither,
    e.g. 404). 434 reads as the HTTP ``434``; both it and ``ws_cu_rejected`` are throttles."""
    return HTTP_STATUS_OUTCOME.get(status) or RECORDED_HANDSHAKE_STATUS_OUTCOME.get(status)
CLOSE_KINDS = ("clean", "unclean", "exhausted", "end")
"""How a websocket session ended: a clean close (planned session end or a clean drop),
an unclean drop, closed by the service for CU exhaustion, still open at the end."""

# -- time --------------------------------------------------------------------------------

WINDOW_S = 12.0
"""The CU budget's window (spec 8.1)."""
HOUR_S = 3_600.0
DAY_S = 86_400.0
"""A UTC day: the daily allowance's period."""

# -- named random streams ------------------------------------------------------------------


@unique
class Rng(StrEnum):
    """The words of random streams' names (:func:`sim.core.rng.stream`).

    A stream's name is a path: whose draws they are (a source, a websocket client, the
    live emulator), its names and indices, and what the draws are for:
    ``stream(seed, Rng.SOURCE, source.name, Rng.RETRY)``. :data:`RANDOM_STREAMS` lists
    every path. A member is its text (``str(Rng.SOURCE) == "source"``), so the seeds are
    those of the names as first written; renaming a word reseeds every stream it is in.
    """

    # whose
    SOURCE = "source"  # one [[sources]] entry: (SOURCE, source name, ...)
    WORKER = "worker"  # one closed-loop worker of a source: (..., WORKER, index, purpose)
    WS = "ws"  # the model's websockets
    CLIENT = "client"  # one [[streams]] client (closed loop: and one of its connections)
    PUBLISH = "publish"  # event publish times of one websocket stream
    LIVE = "live"  # the live emulator and its driver
    DRIVE = "drive"  # the live driver
    # what for
    ARRIVALS = "arrivals"  # an open-loop HTTP source's arrival times
    RETRY = "retry"  # retry back-off jitter
    THINK = "think"  # a closed-loop worker's think times
    MIX = "mix"  # which method each request calls
    SIZING = "sizing"  # the sizing profiles of the Search API's sizing calls
    SERVICE = "service"  # service times
    REPLAY = "replay"  # thinning and jitter of a replayed trace
    REPLAY_FILL = "replay-fill"  # values a replayed trace does not record
    SPREAD = "spread"  # offsets of a replayed trace's copies spread over its period
    TILE = "tile"  # which loops of a tiled trace the hourly weights keep
    WS_ARRIVAL = "arrival"  # an open-loop websocket client's session arrivals
    SESSION = "session"  # websocket session lengths
    GAP = "gap"  # a closed-loop connection's wait before it reconnects
    FAULTS = "faults"  # whether and when a websocket connection drops
    RECONNECT = "reconnect"  # reconnect back-off jitter of a websocket connection
    STALE = "stale"  # how long a dropped websocket's slot stays held
    GAS = "gas"  # the emulator's gas used per sized profile
    PROFILES = "profiles"  # the live driver's choice of sizing profiles
    ITEMS = "items"  # how many items a sizing call sizes
    PROFILE = "profile"  # which sizing profile each sized item has
    CACHE = "cache"  # which calls a source's client answers itself ([[sources]] cache)


_R = Rng
RANDOM_STREAMS: dict[tuple[Rng | type, ...], str] = {
    (_R.SOURCE, str, _R.ARRIVALS): "an open-loop source's arrival times",
    (_R.SOURCE, str, _R.CACHE): "which of an open-loop or replayed source's calls its "
                                "cache answers (one draw per request, in request order)",
    (_R.SOURCE, str, _R.RETRY): "a source's retry jitter",
    (_R.SOURCE, str, _R.WORKER, int, _R.THINK): "a worker's think times",
    (_R.SOURCE, str, _R.MIX): "an open-loop source's method mix",
    (_R.SOURCE, str, _R.SIZING, _R.ITEMS): "an open-loop source's sizing items per call",
    (_R.SOURCE, str, _R.SIZING, _R.PROFILE): "an open-loop source's sizing profiles",
    (_R.SOURCE, str, _R.SIZING, _R.GAS): "an open-loop source's gas used per sized item",
    (_R.SOURCE, str, _R.SERVICE): "a replayed source's service times",
    (_R.SOURCE, str, _R.SERVICE, str): "an open-loop source's service times of a method",
    (_R.SOURCE, str, _R.WORKER, int, _R.MIX): "a worker's method mix",
    (_R.SOURCE, str, _R.WORKER, int, _R.SIZING, _R.ITEMS): "a worker's sizing items per call",
    (_R.SOURCE, str, _R.WORKER, int, _R.SIZING, _R.PROFILE): "a worker's sizing profiles",
    (_R.SOURCE, str, _R.WORKER, int, _R.SIZING, _R.GAS): "a worker's gas used per sized item",
    (_R.SOURCE, str, _R.WORKER, int, _R.SERVICE, str): "a worker's service times of a method",
    (_R.SOURCE, str, _R.REPLAY): "a replayed trace's thinning and jitter",
    (_R.SOURCE, str, _R.REPLAY_FILL): "values a replayed trace lacks",
    (_R.SOURCE, str, _R.REPLAY, _R.SPREAD): "a replayed trace's copies spread over its period",
    (_R.SOURCE, str, _R.REPLAY, _R.TILE): "which loops of a tiled trace are kept by the hour",
    (_R.WS, _R.CLIENT, str, int, _R.FAULTS): "a connection's drops",
    (_R.WS, _R.CLIENT, str, int, _R.RECONNECT): "a connection's reconnect jitter",
    (_R.WS, _R.CLIENT, str, int, _R.STALE): "a connection's stale slot times",
    (_R.WS, _R.CLIENT, str, int, _R.SESSION): "a connection's session lengths",
    (_R.WS, _R.CLIENT, str, int, _R.GAP): "a connection's gaps before reconnecting",
    (_R.WS, _R.CLIENT, str, _R.WS_ARRIVAL): "an open-loop client's session arrivals",
    (_R.WS, _R.CLIENT, str, _R.SESSION): "an open-loop client's session lengths",
    (_R.WS, _R.CLIENT, str, _R.FAULTS): "an open-loop client's drops",
    (_R.WS, _R.CLIENT, str, _R.RECONNECT): "an open-loop client's reconnect jitter",
    (_R.WS, _R.CLIENT, str, _R.STALE): "an open-loop client's stale slot times",
    (_R.WS, _R.PUBLISH, str): "a websocket stream's publish times",
    (_R.LIVE, _R.SERVICE, str): "the emulator's service times of a method",
    (_R.LIVE, _R.GAS): "the emulator's gas per sized profile",
    (_R.LIVE, _R.STALE): "the emulator's stale slot times",
    (_R.LIVE, _R.PUBLISH, str): "the emulator's publish times of a stream",
    (_R.LIVE, _R.DRIVE, str, _R.PROFILES): "the live driver's sizing profiles of a source",
    (_R.LIVE, _R.DRIVE, _R.WS, str, int, _R.FAULTS): "the live driver's drops",
    (_R.LIVE, _R.DRIVE, _R.WS, str, int, _R.RECONNECT): "the live driver's reconnect jitter",
    (_R.LIVE, _R.DRIVE, _R.WS, str, int, _R.SESSION): "the live driver's session lengths",
    (_R.LIVE, _R.DRIVE, _R.WS, str, int, _R.GAP): "the live driver's reconnect gaps",
}
"""Every named random stream: its path (``str`` / ``int``: a name or an index goes there)
and what it draws. Shared on purpose: the live driver draws a source's retry jitter, its
workers' think times and open-loop websocket sessions from the model's own streams, so a
driven run replays the model's draws."""
del _R
