"""The emulator's ASGI application: routing, authentication, bodies and replies.

Hostnames (the ``Host`` header, else the TLS SNI) pick the API: ``search.*`` (``POST
/v1/size``, the monitoring websocket ``/v1/monitoring/unhealthy/ws``), ``rpc.*``
(``POST /`` JSON-RPC 2.0: ``svc_call``, ``svc_pendingBlock`` and any RPC method of the
scenario), ``streams.*`` (websockets ``/pending-txs``, ``/new-blocks``,
``/pending-logs``). ``/healthz`` and the developer endpoints (``/admin/window``,
``/admin/reset``, ``/admin/tier``, ``/admin/faults``, ``/admin/requests``,
``/admin/rules``: :mod:`.admin`) answer on every hostname without a key, the latter to
loopback clients or with the admin token only.

A request is checked from its headers before any body byte is read (421, 401, then the
connection's admission, 430); its body is read as it streams in, up to
:data:`MAX_BODY_BYTES` (413 beyond, never buffered).

Every decision is :class:`~sim.policy.admission.Admission`'s; this module only turns
HTTP into its arguments and its decisions into HTTP. Where the spec says "not shown"
the replies follow the assumptions listed in :data:`ASSUMPTIONS` (also in
docs/explanation/assumptions.md).
An admitted request sleeps its service time (drawn from the scenario's method
distribution, in service seconds) and is settled -- at its scheduled service time,
whatever the event loop's lateness -- before it is answered; every reply
carries ``x-capsim-t``, the service time at which the request was decided.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config.pricing import Pricing
from ..config.resolved import LoadedScenario
from ..config.scenario import Sizing
from ..core.rng import stream as named_stream
from ..core.vocabulary import (
    AUTH_401,
    MONITORING,
    MONITORING_PATH,
    OK,
    OUTCOME_STATUS,
    PROTO_421,
    RPC,
    RPC_32005,
    SEARCH,
    SIZE_METHOD,
    STREAMS,
    STREAMS_API_STREAMS,
    Rng,
)
from ..policy.admission import Admission, Decision
from ..policy.slots import stale_expiry_s
from ..traces.bodies import BodyError, parse_json, validate_rpc_envelope, validate_sizing_body
from .access import AccessLog, Exchange
from .admin import Journal, Rules
from .clock import ServiceClock
from .connections import ConnectionInfo, ConnectionRegistry, client_gone
from .devtools import DeveloperEndpoints
from .publisher import Publisher

HTTP_STATUS = {o: 200 if o == RPC_32005 else s for o, s in OUTCOME_STATUS.items()}
"""HTTP status of each outcome: the vocabulary's :data:`OUTCOME_STATUS`, except that
``-32005`` is a JSON-RPC error inside a 200 reply."""

WS_EXHAUSTED_CODE = 1013
"""Close code of a billed stream closed because a delivery could not reserve its CU."""

ASSUMPTIONS = (
    "Hostnames: search.localhost, rpc.localhost, streams.localhost and the same under each "
    "scenario region (Host, else SNI); /healthz and /admin/* on any hostname, without a key "
    "(/admin/* to loopback clients only, or with X-Admin-Token).",
    "Checks from the headers first: 421 (RPC, POST /v1/size without HTTP/2 and SNI), then "
    "401 on every other path; a connection counts against the account's limits from its "
    "first request that passes both.",
    "Error bodies: JSON {\"error\": {\"code\": <status or outcome>, \"message\": ...}}; "
    "JSON-RPC errors in a 200 reply: -32700 parse error, -32600 invalid request, -32601 "
    "unknown method, -32005 \"rate limit exceeded\"; a notification is served, billed and "
    "answered 204 without a body. NaN, Infinity and nesting too deep to parse are parse "
    "errors; an id that is no finite number (1e400) is an invalid request, answered "
    "with id null.",
    "Bodies over MAX_BODY_BYTES (1 MiB) get 413, a Content-Type other than JSON 415.",
    "401 for a missing or unknown X-Api-Key (spec 5: response not shown).",
    "A websocket handshake refused for CU gets HTTP 434 with Retry-After (spec 7: "
    "'handshake rejected').",
    "Oversized requests (a reservation above the whole window budget) get 413.",
    "POST /v1/size replies {\"items\": n, \"gas_used\": total gas, \"cu\": settled CU}; "
    "gas used per item is drawn from the first sizing source's gas_used distribution.",
    "svc_call returns \"0x\"; svc_pendingBlock returns {\"number\": hex service slot}; "
    "other scenario RPC methods return null. Batches are refused (-32600).",
    "Stream messages: {\"stream\", \"seq\", \"t_s\"} (service time of the publish); an "
    "exhausted billed stream sends {\"error\": \"cu exhausted\"} then closes with 1013.",
    "Messages a client sends on a websocket are ignored.",
    "Regions are hostnames on loopback (no emulated round-trip time); connection opening "
    "limits count per SNI hostname.",
)


MAX_BODY_BYTES = 1 << 20
"""Largest request body served (1 MiB); a larger one is refused with ``413`` as soon as
its ``Content-Length`` or the bytes received so far exceed it."""

LATE_WARN_S = 0.1
"""Service seconds the event loop may fall behind (a service time overrun, a request
taken up after it was read; wall lateness multiplied by ``--time-scale``) before the
server warns; settling is on the schedule and deciding at the read time whatever the
lateness, see :meth:`EmulatorApp._serve` and :meth:`EmulatorApp._arrival`."""


class Lateness:
    """How far behind the event loop is: ``"service"``, how late it wakes requests at
    the end of their service time; ``"arrival"``, how long after the server read a
    request it took the request up."""

    _WHAT = {"service": "a service time ended {late:.3f} service s late",
             "arrival": "a request was taken up {late:.3f} service s after it was read"}

    def __init__(self, time_scale: float, warn: Callable[[str], None] | None = None,
                 kind: str = "service") -> None:
        self.time_scale = time_scale
        self.kind = kind
        self.count = 0
        self.max_s = 0.0
        self.over = 0
        self.warn = warn

    def observe(self, late_s: float) -> None:
        self.count += 1
        self.max_s = max(self.max_s, late_s)
        if late_s > LATE_WARN_S:
            self.over += 1
            if self.warn is not None and self.over in (1, 10, 100, 1000, 10000):
                what = self._WHAT[self.kind].format(late=late_s)
                self.warn(f"capsim serve: warning: {what} ({self.over} so far over "
                          f"{LATE_WARN_S} s) at time scale {self.time_scale:g}; the server "
                          "cannot see delays before it reads a request, so decisions near "
                          "a window boundary may differ from the simulator's (use a "
                          "smaller --time-scale)")

    def as_dict(self) -> dict:
        return {"served": self.count, "max_late_s": round(self.max_s, 6),
                "over_warn": self.over, "warn_s": LATE_WARN_S}


SEND_QUEUE = 1024
"""Events a slow websocket reader may fall behind by before further events are dropped
for it (a stalled consumer must not hold up the stream for everyone else)."""


@dataclass(eq=False)
class _Socket:
    """A live websocket: its outgoing queue, drained by its own writer task."""

    stream: str
    send: object
    conn: ConnectionInfo | None
    account: Admission
    closed_by_server: bool = False
    queue: asyncio.Queue = field(default_factory=lambda: asyncio.Queue(SEND_QUEUE))
    dropped: int = 0

    async def writer(self) -> None:
        while True:
            message = await self.queue.get()
            await _quiet(self.send(message))
            if message["type"] == "websocket.close":
                return

    def release(self, app: EmulatorApp, *, clean: bool, stale_expiry_s: float) -> None:
        """Give the slot back -- to the account that gave it (not to one made by a reset)."""
        if self.account is app.admission:
            self.account.websocket_closed(app.clock.now(), clean=clean,
                                          stale_expiry_s=stale_expiry_s)

    def offer(self, message: dict) -> None:
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.dropped += 1


class EmulatorApp(DeveloperEndpoints):
    """The ASGI application of one account on one tier.

    ``registry`` is the connection registry of :mod:`.connections` (``None``: run
    without it, as under a test server that cannot tell SNI -- every client then counts
    as having SNI and connection limits are not enforced).
    """

    def __init__(self, loaded: LoadedScenario, admission: Admission, clock: ServiceClock,
                 registry: ConnectionRegistry | None = None,
                 log: AccessLog | None = None) -> None:
        sc = loaded.scenario
        self.loaded, self.admission, self.clock = loaded, admission, clock
        self.log = log or AccessLog(None)
        self.late = Lateness(clock.time_scale)
        self.arrival_late = Lateness(clock.time_scale, kind="arrival")
        self.stall_until = 0.0  # time.monotonic() until which requests wait (faults)
        self._last_decided = 0.0  # service time of the latest decision (_in_decision_order)
        self.warn: Callable[[str], None] | None = None  # internal errors (set by serve)
        self.registry = registry
        if registry is not None:
            registry.on_closed = self._connection_closed
        self.keys = frozenset(sc.account_list[0].keys)
        self.pricing: Pricing = loaded.pricing
        self._methods = sc.methods
        self._rpc_methods = {m for m, spec in sc.methods.items() if spec.api == RPC}
        self.log.methods = frozenset(sc.methods)  # written as asked; any other as a pseudonym
        self._service_rng = {m: named_stream(sc.seed, Rng.LIVE, Rng.SERVICE, m) for m in sc.methods}
        self._gas_rng = named_stream(sc.seed, Rng.LIVE, Rng.GAS)
        self._stale_rng = named_stream(sc.seed, Rng.LIVE, Rng.STALE)
        sizing = next((s.sizing for s in sc.sources if SIZE_METHOD in s.mix), Sizing())
        self._gas_used = sizing.gas_used
        self._stale = sc.ws.stale_expiry_s
        self.sockets: dict[str, dict[_Socket, None]] = {
            s: {} for s in (*STREAMS_API_STREAMS, MONITORING)}
        self.publisher = Publisher(sc, clock, self._deliver)
        self.stopping = asyncio.Event()
        """Set when the server begins to stop: open websockets are closed (1001)."""
        self.journal = Journal()
        self.rules = Rules(sc.seed)
        self.admin_token: str | None = None
        """``X-Admin-Token`` every ``/admin/*`` request needs (None: loopback only)."""

    # -- ASGI entry ------------------------------------------------------------------

    async def __call__(self, scope, receive, send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.publisher.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.publisher.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- helpers ---------------------------------------------------------------------

    def _conn(self, scope) -> ConnectionInfo | None:
        return self.registry.get(scope.get("client")) if self.registry is not None else None

    def _arrival(self, conn: ConnectionInfo | None, stalled: bool = False) -> float:
        """When a request reached the service (service seconds): when the server last
        read bytes of its connection -- not when the event loop took the request up, a
        delay ``--time-scale`` would multiply -- or now, after a ``stall`` fault or
        without a connection record."""
        now = self.clock.now()
        if stalled or conn is None or not conn.read_unix:
            return self._in_decision_order(now)
        read = min(now, self.clock.at(conn.read_unix))
        self.arrival_late.observe(now - read)
        return self._in_decision_order(read)

    def _other_window(self, a: float, b: float) -> bool:
        """Whether service times ``a`` and ``b`` fall in different CU windows."""
        w = self.admission.limiter.window_s
        return math.floor(a / w) != math.floor(b / w)

    def _in_decision_order(self, t: float) -> float:
        """``t``, or the latest time already decided at if later: requests read on
        different connections are taken up in an order of their own (TLS, the event
        loop), and the account must see -- and ``x-capsim-t`` tell -- its decisions in
        the order it made them (a refusal never dated before an admission it followed).
        Every caller decides at the time returned before it next awaits."""
        t = max(t, self._last_decided)
        self._last_decided = t
        return t

    @staticmethod
    def _header(scope, name: bytes) -> str | None:
        for k, v in scope.get("headers", ()):
            if k.lower() == name:
                return v.decode("latin-1")
        return None

    def _api_of(self, scope, conn: ConnectionInfo | None) -> str | None:
        """The API a request addresses: by its ``Host`` (HTTP/2 ``:authority``), else by
        the connection's SNI. Host first, because an HTTP/2 client may rightly reuse one
        connection for every hostname its certificate covers."""
        host = self._header(scope, b"host") \
            or (conn.sni if conn is not None and conn.sni else None) or ""
        label = host.split(":", 1)[0].split(".", 1)[0].lower()
        return {"search": SEARCH, "rpc": RPC, "streams": STREAMS}.get(label)

    def _key_ok(self, scope) -> bool:
        return self._header(scope, b"x-api-key") in self.keys

    def _draw_service_s(self, method: str) -> float:
        return float(self._methods[method].service_time.sample(self._service_rng[method], 1)[0])

    async def _error(self, ex: Exchange, decision: Decision, message: str,
                     close: bool = False) -> None:
        headers = []
        if not math.isnan(decision.retry_after_s):
            headers.append(("retry-after", str(int(decision.retry_after_s))))
        ex.outcome = decision.name
        await ex.reply(HTTP_STATUS[decision.outcome],
                       {"error": {"code": decision.name, "message": message}}, headers,
                       close=close)

    async def _body(self, scope, receive, ex: Exchange) -> bytes | None:
        """The request body, read as it streams in; ``None`` (and a ``413`` sent) once
        it exceeds :data:`MAX_BODY_BYTES` -- announced or counted, never buffered."""
        length = self._header(scope, b"content-length")
        if length is not None and length.strip().isdigit() and int(length) > MAX_BODY_BYTES:
            await self._too_large(ex)
            return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                ex.disconnected = True
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                chunks.clear()
                await self._too_large(ex)
                return None
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)

    async def _too_large(self, ex: Exchange) -> None:
        await ex.reply(413, {"error": {"code": "body_too_large", "message":
                       f"request body over {MAX_BODY_BYTES} bytes"}}, close=True)

    # -- HTTP ------------------------------------------------------------------------

    async def _http(self, scope, receive, send) -> None:
        ex = Exchange(scope, send)
        conn = self._conn(scope)
        if self.registry is not None:
            self.registry.request_started(conn)
        try:
            await self._http_exchange(scope, receive, ex)
        except Exception as err:  # noqa: BLE001 - a bug answers 500 with a body, no traceback
            if self.warn is not None:
                self.warn(f"capsim serve: internal error on {scope.get('path')}: "
                          f"{type(err).__name__}")
            if ex.status is None:
                await ex.reply(500, {"error": {"code": "500", "message": "internal error"}})
        finally:
            if self.registry is not None:
                self.registry.request_ended(conn)
            self._record(ex, conn)

    def _record(self, ex: Exchange, conn: ConnectionInfo | None) -> None:
        """Log ``ex`` and keep it in the journal (not the admin endpoints' own requests)."""
        rec = self.log.write(ex, conn.sni if conn is not None else None)
        if not rec["path"].startswith("/admin/"):
            self.journal.add(rec)

    async def _http_exchange(self, scope, receive, ex: Exchange) -> None:
        path, method = scope["path"], scope["method"]
        ex.now = self.clock.now()
        if path == "/healthz":
            await ex.reply(200, self._health())
            return
        if path.startswith("/admin/"):
            await self._admin(scope, receive, ex, path, method)
            return
        stalled = await self._stalled()
        conn = self._conn(scope)
        api = ex.api = self._api_of(scope, conn)
        route = ("rpc" if api == RPC and path == "/" and method == "POST" else
                 "size" if api == SEARCH and path == "/v1/size" and method == "POST" else None)
        h2_sni = scope.get("http_version") == "2" and (conn is None or bool(conn.sni))
        key_ok = self._key_ok(scope)
        ex.now = now = self._arrival(conn, stalled)
        read_mark = conn.read_unix if conn is not None else None
        # A request is dated once, when its headers were taken up -- the connection's
        # limits and the CU window are asked at the same time -- unless its body
        # arrived in a later window (below).
        # 1. What the headers say, before any body is read: protocol, key.
        if route is not None and not h2_sni:
            await self._error(ex, Decision(PROTO_421), "RPC and POST /v1/size need HTTP/2 "
                              "with TLS SNI", close=scope.get("http_version") != "2")
            return
        if not key_ok:
            await self._error(ex, Decision(AUTH_401), "missing or unknown X-Api-Key")
            return
        if conn is not None and self.registry is not None:
            self.registry.mark_keyed(conn)  # no longer capped or timed out (guard)
        # 2. The account's connection limits: only a connection that presents a valid key
        #    over HTTP/2 with SNI (what RPC and sizing need) is the account's.
        if api in (RPC, SEARCH) and conn is not None and h2_sni:
            if conn.admitted is None:
                conn.admitted = self.admission.connection_opened(now, conn.sni or api)
                conn.account = self.admission
            if not conn.admitted:
                await self._error(ex, Admission.refused_connection(),
                                  "connection concurrency too high; reuse existing connections")
                # The refused connection is not the account's: close it once answered.
                asyncio.get_running_loop().call_later(0.05, conn.close)
                return
        if route is None:
            await ex.reply(404, {"error": {"code": "404", "message": "not found"}})
            return
        ctype = self._header(scope, b"content-type")
        if ctype is not None and ctype.split(";", 1)[0].strip().lower() != "application/json":
            await ex.reply(415, {"error": {"code": "415", "message":
                           "expected Content-Type: application/json"}}, close=True)
            return
        body = await self._body(scope, receive, ex)
        if body is None:
            return
        if client_gone(receive):
            ex.disconnected = True  # cancelled before it was decided: not served
            return
        if conn is not None and conn.read_unix != read_mark and self._other_window(
                now, self.clock.at(conn.read_unix)):
            # A body that came in after a window boundary: decided once it has arrived,
            # in the window that pays for it.
            ex.now = now = self._arrival(conn, stalled)
        if route == "rpc":
            await self._rpc(scope, ex, body, now, h2_sni)
        else:
            await self._size(scope, ex, body, now, h2_sni)

    def _health(self) -> dict:
        clock, adm = self.clock, self.admission
        now = clock.now()
        return {
            "status": "ok", "t0_unix": clock.t0_unix, "time_scale": clock.time_scale,
            "now_s": now, "tier": adm.tier.name,
            "connections": {"tcp_open": len(self.registry) if self.registry else None,
                            "account_active": adm.connections.active},
            "websockets": {"live": adm.slots.live, "stale": adm.slots.stale(now)}}

    async def _rpc_error(self, ex: Exchange, ident, code: int, message: str,
                         notification: bool = False) -> None:
        ex.outcome = str(code)
        if notification:
            await ex.reply(204, None)
            return
        await ex.reply(200, {"jsonrpc": "2.0", "id": ident,
                             "error": {"code": code, "message": message}})

    async def _rpc(self, scope, ex: Exchange, body: bytes, now: float, h2_sni: bool) -> None:
        try:
            # Strict JSON: NaN and Infinity are not JSON; nesting too deep to parse is a
            # parse error, not an exception (an empty 500).
            payload = parse_json(body)
        except BodyError:
            await self._rpc_error(ex, None, -32700, "parse error")
            return
        if isinstance(payload, list):
            await self._rpc_error(ex, None, -32600, "invalid request: batches are not served "
                                  "by the emulator")
            return
        try:
            call = validate_rpc_envelope(payload)
        except BodyError as err:
            ident = payload.get("id") if isinstance(payload, dict) else None
            if not _echoable_id(ident):
                ident = None  # e.g. 1e400 (read as infinity): not a JSON number to echo
            await self._rpc_error(ex, ident, -32600, f"invalid request: {err}")
            return
        ex.what = call.method
        quiet = call.notification
        if await self._injected(scope, ex):
            return
        if call.method not in self._rpc_methods:
            await self._rpc_error(ex, call.id, -32601, "method not found", quiet)
            return
        cost = self.pricing.rpc.cost(call.method)
        d = self._decide(ex, now, call.method, scope, h2_sni, cost, cost, RPC)
        if d.outcome == RPC_32005:
            await self._rpc_error(ex, call.id, -32005, "rate limit exceeded", quiet)
            return
        if d.outcome != OK:
            await self._error(ex, d, d.name)
            return
        await self._serve(ex, d, now, call.method)
        if quiet:
            await ex.reply(204, None)
            return
        if call.method == "svc_call":
            result = "0x"
        elif call.method == "svc_pendingBlock":
            result = {"number": hex(int(now // 12.0))}
        else:
            result = None
        await ex.reply(200, {"jsonrpc": "2.0", "id": call.id, "result": result})

    def _decide(self, ex: Exchange, now: float, method: str, scope, h2_sni: bool,
                reserve: float, actual: float, api: str) -> Decision:
        d = self.admission.request(now, method, key_ok=self._key_ok(scope), h2_sni=h2_sni,
                                   reserve_cu=reserve, actual_cu=actual, api=api)
        ex.decided(d.name, reserve)
        ex.account = self.admission  # a reset while in service must not settle elsewhere
        return d

    async def _serve(self, ex: Exchange, d: Decision, now: float, method: str) -> None:
        """Spend the service time, then settle -- at the scheduled service time, so that
        the event loop's lateness is not multiplied by ``--time-scale``."""
        due = now + self._draw_service_s(method)
        account = ex.account or self.admission
        await self.clock.sleep_until(due)
        # Settled by the account that admitted it: after a reset, the new account's
        # limiter has other windows (an IndexError, or a refund of CU it never booked).
        account.settle(due, d)
        ex.settled = d.ticket[2] if d.ticket is not None else 0.0
        self.late.observe(self.clock.now() - due)

    async def _size(self, scope, ex: Exchange, body: bytes, now: float, h2_sni: bool) -> None:
        ex.what = SIZE_METHOD
        if await self._injected(scope, ex):
            return
        try:
            req = validate_sizing_body(parse_json(body))
        except BodyError as err:
            await ex.reply(400, {"error": {"code": "400", "message": str(err)}})
            return
        caps = self.pricing.sizing.profile_gas_cap
        unknown = sorted({p for p in req.profiles if p not in caps})
        if unknown:
            await ex.reply(400, {"error": {"code": "400", "message":
                           f"unknown profile; expected one of {sorted(caps)}"}})
            return
        sizing = self.pricing.sizing
        gas = [min(max(f, 0.0), 1.0) * caps[p] for p, f in
               zip(req.profiles, self._gas_used.sample(self._gas_rng, len(req.profiles)).tolist()
                   if req.profiles else [], strict=True)]
        gas = [float(int(g)) for g in gas]
        reserve = round(sum(sizing.item_reserve(p) for p in req.profiles), 6)
        actual = round(sum(sizing.item_settle(g) for g in gas), 6)
        d = self._decide(ex, now, SIZE_METHOD, scope, h2_sni, reserve, actual, SEARCH)
        if d.outcome != OK:
            await self._error(ex, d, d.name)
            return
        await self._serve(ex, d, now, SIZE_METHOD)
        await ex.reply(200, {"items": req.items, "gas_used": int(sum(gas)), "cu": actual})

    def _connection_closed(self, info: ConnectionInfo) -> None:
        # Only a connection the current account admitted holds one of its slots.
        if info.admitted and info.account is self.admission:
            self.admission.connection_closed(self.clock.now())

    # -- websockets ------------------------------------------------------------------

    def _stream_of(self, api: str | None, path: str) -> str | None:
        if api == STREAMS and path.lstrip("/") in STREAMS_API_STREAMS:
            return path.lstrip("/")
        if api == SEARCH and path == MONITORING_PATH:
            return MONITORING
        return None

    async def _deny(self, send, status: int, code: str, retry_after: float, t: float) -> None:
        data = json.dumps({"error": {"code": code, "message": code}}).encode()
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(data)).encode()),
                   (b"x-capsim-t", f"{t:.6f}".encode())]
        if not math.isnan(retry_after):
            headers.append((b"retry-after", str(int(retry_after)).encode()))
        await send({"type": "websocket.http.response.start", "status": status,
                    "headers": headers})
        await send({"type": "websocket.http.response.body", "body": data})

    async def _websocket(self, scope, receive, send) -> None:
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        stalled = await self._stalled()
        conn = self._conn(scope)
        ex = Exchange(scope, send)
        ex.now = now = self._arrival(conn, stalled)
        ex.api = self._api_of(scope, conn)
        name = self._stream_of(ex.api, scope["path"])
        ex.what = name or "-"
        adm = self.admission
        key_ok = self._key_ok(scope)
        if key_ok and conn is not None and self.registry is not None:
            self.registry.mark_keyed(conn)
        rule = self._rule(scope, ex) if key_ok and name is not None else None
        if rule is not None:
            ex.fault = rule.id
        if rule is not None and (rule.drop or rule.status is not None):
            if rule.delay_s:
                await asyncio.sleep(rule.delay_s)
            if rule.drop:
                ex.disconnected = True
                if conn is not None:
                    conn.abort()
            else:
                ex.status, ex.outcome = rule.status, "fault"
                await self._deny(send, rule.status, "fault", float(rule.retry_after_s)
                                 if rule.retry_after_s is not None else math.nan, now)
            self._record(ex, conn)
            return
        if not key_ok:  # the key first, as on HTTP
            d = Decision(AUTH_401)
        elif name is None:
            d = None
        else:
            d = adm.handshake(now, name, key_ok=True)
        ex.decided(d.name if d is not None else "404",
                   adm.connect_cu if d is not None and d.outcome == OK else 0.0)
        if d is None or d.outcome != OK:
            ex.status = 404 if d is None else HTTP_STATUS[d.outcome]
            self._record(ex, conn)
            if d is None:
                await self._deny(send, 404, "404", math.nan, now)
            else:
                await self._deny(send, ex.status, d.name, d.retry_after_s, now)
            return
        ex.status = 101
        self._record(ex, conn)
        if rule is not None and rule.delay_s:
            await asyncio.sleep(rule.delay_s)  # a latency rule: a slow handshake
        sock = _Socket(name, send, conn, adm)
        if self.registry is not None:
            self.registry.request_started(conn)
        loop = asyncio.get_running_loop()
        writer = None
        stopping = loop.create_task(self.stopping.wait())
        try:
            await send({"type": "websocket.accept",
                        "headers": [(b"x-capsim-t", f"{now:.6f}".encode())]})
            writer = loop.create_task(sock.writer())
            self.sockets[name][sock] = None
            while True:
                message = loop.create_task(receive())
                await asyncio.wait({message, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if message.done():
                    if message.result()["type"] == "websocket.disconnect":
                        break
                    continue  # messages from the client are ignored
                # The server is stopping: close with "going away" rather than hold the
                # shutdown until the client leaves.
                message.cancel()
                if not sock.closed_by_server:
                    sock.closed_by_server = True
                    self.sockets[name].pop(sock, None)
                    sock.release(self, clean=True, stale_expiry_s=0.0)
                    sock.offer({"type": "websocket.close", "code": 1001, "reason": "stopping"})
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(writer, 1.0)
                break
        finally:
            if self.registry is not None:
                self.registry.request_ended(conn)
            stopping.cancel()
            self.sockets[name].pop(sock, None)
            if writer is not None and not sock.closed_by_server:
                writer.cancel()
            if not sock.closed_by_server:
                unclean = conn is not None and conn.tcp_closed
                sock.release(self, clean=not unclean, stale_expiry_s=self._expiry())

    def _expiry(self) -> float:
        return stale_expiry_s(self._stale, lambda: float(self._stale_rng.random()))

    async def _deliver(self, name: str, seq: int, t: float) -> None:
        """Publish one event of ``name`` to every live socket; billed deliveries that
        cannot reserve CU close their socket (spec 6.2)."""
        socks = list(self.sockets[name])
        if not socks:
            return
        data = json.dumps({"stream": name, "seq": seq, "t_s": round(t, 6)})
        for sock in socks:
            if sock.closed_by_server:
                continue
            if self.admission.publish(t, name):
                sock.offer({"type": "websocket.send", "text": data})
                continue
            sock.closed_by_server = True
            self.sockets[name].pop(sock, None)
            if sock.account is self.admission:
                self.admission.websocket_closed(t, clean=True, stale_expiry_s=0.0)
            sock.offer({"type": "websocket.send", "text": json.dumps(
                {"error": "cu exhausted", "t_s": round(t, 6)})})
            sock.offer({"type": "websocket.close", "code": WS_EXHAUSTED_CODE,
                        "reason": "cu exhausted"})


def _echoable_id(ident) -> bool:
    """Whether a request's ``id`` can be echoed as valid JSON (JSON-RPC 2.0: a string, a
    number or null; a float must be finite)."""
    if ident is None or isinstance(ident, str):
        return True
    if isinstance(ident, bool):
        return False
    return isinstance(ident, int) or (isinstance(ident, float) and math.isfinite(ident))


async def _quiet(coro) -> None:
    """Send on a socket that may have gone away meanwhile (not the emulator's error)."""
    with contextlib.suppress(Exception):
        await coro
