"""The emulator's ASGI application: routing, authentication, bodies and replies.

Hostnames (the ``Host`` header, else the TLS SNI) pick the API: ``search.*`` (``POST
/v1/size``, the monitoring websocket ``/v1/monitoring/unhealthy/ws``), ``rpc.*``
(``POST /`` JSON-RPC 2.0: ``svc_call``, ``svc_pendingBlock`` and any RPC method of the
scenario), ``streams.*`` (websockets ``/pending-txs``, ``/new-blocks``,
``/pending-logs``). ``/healthz`` answers on every hostname without a key.

Every decision is :class:`~sim.policy.admission.Admission`'s; this module only turns
HTTP into its arguments and its decisions into HTTP. Where the spec says "not shown"
the replies follow the assumptions listed in :data:`ASSUMPTIONS` (also in
docs/explanation/assumptions.md).
An admitted request sleeps its service time (drawn from the scenario's method
distribution, in service seconds) and is settled before it is answered; every reply
carries ``x-capsim-t``, the service time at which the request was decided.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from dataclasses import dataclass, field

from ..config.pricing import Pricing
from ..config.resolved import LoadedScenario
from ..config.scenario import Sizing
from ..core.rng import stream as named_stream
from ..core.vocabulary import (
    AUTH_401,
    CONN_430,
    HTTP_434,
    MONITORING,
    MONITORING_PATH,
    OK,
    OVERSIZED,
    PAY_402,
    PROTO_421,
    RPC,
    RPC_32005,
    SEARCH,
    SIZE_METHOD,
    STREAMS,
    STREAMS_API_STREAMS,
    WS_435,
    WS_CU,
    Rng,
)
from ..policy.admission import Admission, Decision
from ..traces.bodies import BodyError, parse_json, validate_rpc_envelope, validate_sizing_body
from .clock import ServiceClock
from .connections import ConnectionInfo, ConnectionRegistry
from .publisher import Publisher

HTTP_STATUS = {OK: 200, HTTP_434: 434, RPC_32005: 200, PAY_402: 402, AUTH_401: 401,
               OVERSIZED: 413, PROTO_421: 421, CONN_430: 430, WS_435: 435, WS_CU: 434}
"""HTTP status of each outcome (``-32005`` is a JSON-RPC error inside a 200 reply; a
handshake refused for CU is answered 434, like an HTTP endpoint)."""

WS_EXHAUSTED_CODE = 1013
"""Close code of a billed stream closed because a delivery could not reserve its CU."""

ASSUMPTIONS = (
    "Hostnames: search.localhost, rpc.localhost, streams.localhost (Host, else SNI); "
    "/healthz on any hostname, without a key.",
    "Error bodies: JSON {\"error\": {\"code\": <status or outcome>, \"message\": ...}}; "
    "JSON-RPC errors in a 200 reply: -32005 \"rate limit exceeded\", -32600 invalid "
    "request, -32601 unknown method.",
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
    "One region (loopback): no emulated round-trip time; connection limits count per "
    "SNI hostname, so rpc.localhost and search.localhost are separate hostnames.",
)


SEND_QUEUE = 1024
"""Events a slow websocket reader may fall behind by before further events are dropped
for it (a stalled consumer must not hold up the stream for everyone else)."""


@dataclass(eq=False)
class _Socket:
    """A live websocket: its outgoing queue, drained by its own writer task."""

    stream: str
    send: object
    conn: ConnectionInfo | None
    closed_by_server: bool = False
    queue: asyncio.Queue = field(default_factory=lambda: asyncio.Queue(SEND_QUEUE))
    dropped: int = 0

    async def writer(self) -> None:
        while True:
            message = await self.queue.get()
            await _quiet(self.send(message))
            if message["type"] == "websocket.close":
                return

    def offer(self, message: dict) -> None:
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.dropped += 1


class EmulatorApp:
    """The ASGI application of one account on one tier.

    ``registry`` is the connection registry of :mod:`.connections` (``None``: run
    without it, as under a test server that cannot tell SNI -- every client then counts
    as having SNI and connection limits are not enforced).
    """

    def __init__(self, loaded: LoadedScenario, admission: Admission, clock: ServiceClock,
                 registry: ConnectionRegistry | None = None) -> None:
        sc = loaded.scenario
        self.loaded, self.admission, self.clock = loaded, admission, clock
        self.registry = registry
        if registry is not None:
            registry.on_closed = self._connection_closed
        self.keys = frozenset(sc.account_list[0].keys)
        self.pricing: Pricing = loaded.pricing
        self._methods = sc.methods
        self._rpc_methods = {m for m, spec in sc.methods.items() if spec.api == RPC}
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

    async def _reply(self, send, status: int, body, headers=(), t: float | None = None) -> None:
        data = json.dumps(body).encode()
        hdrs = [(b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode())]
        if t is not None:
            hdrs.append((b"x-capsim-t", f"{t:.6f}".encode()))
        hdrs.extend((k.encode(), v.encode()) for k, v in headers)
        await send({"type": "http.response.start", "status": status, "headers": hdrs})
        await send({"type": "http.response.body", "body": data})

    async def _error(self, send, decision: Decision, t: float, message: str) -> None:
        headers = []
        if not math.isnan(decision.retry_after_s):
            headers.append(("retry-after", str(int(decision.retry_after_s))))
        status = HTTP_STATUS[decision.outcome]
        await self._reply(send, status, {"error": {"code": decision.name, "message": message}},
                          headers, t)

    @staticmethod
    async def _body(receive) -> bytes:
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    # -- HTTP ------------------------------------------------------------------------

    async def _http(self, scope, receive, send) -> None:
        path, method = scope["path"], scope["method"]
        if path == "/healthz":
            clock = self.clock
            now, adm = clock.now(), self.admission
            await self._reply(send, 200, {
                "status": "ok", "t0_unix": clock.t0_unix, "time_scale": clock.time_scale,
                "now_s": now, "tier": adm.tier.name,
                "connections": {"tcp_open": len(self.registry) if self.registry else None,
                                "account_active": adm.connections.active},
                "websockets": {"live": adm.slots.live, "stale": adm.slots.stale(now)}})
            return
        conn = self._conn(scope)
        api = self._api_of(scope, conn)
        body = await self._body(receive)
        now = self.clock.now()
        if api in (RPC, SEARCH) and conn is not None:
            if conn.admitted is None:
                conn.admitted = self.admission.connection_opened(now, conn.sni or api)
            if not conn.admitted:
                await self._error(send, Admission.refused_connection(), now,
                                  "connection concurrency too high; reuse existing connections")
                # The refused connection is not the account's: close it once answered.
                asyncio.get_running_loop().call_later(0.05, conn.close)
                return
        h2_sni = scope.get("http_version") == "2" and (conn is None or bool(conn.sni))
        if api == RPC and path == "/" and method == "POST":
            await self._rpc(scope, send, body, now, h2_sni)
        elif api == SEARCH and path == "/v1/size" and method == "POST":
            await self._size(scope, send, body, now, h2_sni)
        else:
            await self._reply(send, 404, {"error": {"code": "404", "message": "not found"}},
                              t=now)

    async def _rpc(self, scope, send, body: bytes, now: float, h2_sni: bool) -> None:
        try:
            payload = parse_json(body)
            if isinstance(payload, list):
                raise BodyError("", "batches are not served by the emulator")
            call = validate_rpc_envelope(payload)
        except BodyError as err:
            await self._reply(send, 400, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": f"invalid request: {err}"}}, t=now)
            return
        if call.method not in self._rpc_methods:
            await self._reply(send, 200, {"jsonrpc": "2.0", "id": call.id, "error": {
                "code": -32601, "message": "method not found"}}, t=now)
            return
        cost = self.pricing.rpc.cost(call.method)
        d = self.admission.request(now, call.method, key_ok=self._key_ok(scope), h2_sni=h2_sni,
                                   reserve_cu=cost, actual_cu=cost, api=RPC)
        if d.outcome == RPC_32005:
            await self._reply(send, 200, {"jsonrpc": "2.0", "id": call.id, "error": {
                "code": -32005, "message": "rate limit exceeded"}}, t=now)
            return
        if d.outcome != OK:
            await self._error(send, d, now, d.name)
            return
        await self.clock.sleep(self._draw_service_s(call.method))
        self.admission.settle(self.clock.now(), d)
        if call.method == "svc_call":
            result = "0x"
        elif call.method == "svc_pendingBlock":
            result = {"number": hex(int(now // 12.0))}
        else:
            result = None
        await self._reply(send, 200, {"jsonrpc": "2.0", "id": call.id, "result": result}, t=now)

    async def _size(self, scope, send, body: bytes, now: float, h2_sni: bool) -> None:
        try:
            req = validate_sizing_body(parse_json(body))
        except BodyError as err:
            await self._reply(send, 400, {"error": {"code": "400", "message": str(err)}}, t=now)
            return
        caps = self.pricing.sizing.profile_gas_cap
        unknown = sorted({p for p in req.profiles if p not in caps})
        if unknown:
            await self._reply(send, 400, {"error": {"code": "400", "message":
                              f"unknown profile; expected one of {sorted(caps)}"}}, t=now)
            return
        sizing = self.pricing.sizing
        gas = [min(max(f, 0.0), 1.0) * caps[p] for p, f in
               zip(req.profiles, self._gas_used.sample(self._gas_rng, len(req.profiles)).tolist()
                   if req.profiles else [], strict=True)]
        gas = [float(int(g)) for g in gas]
        reserve = round(sum(sizing.item_reserve(p) for p in req.profiles), 6)
        actual = round(sum(sizing.item_settle(g) for g in gas), 6)
        d = self.admission.request(now, SIZE_METHOD, key_ok=self._key_ok(scope), h2_sni=h2_sni,
                                   reserve_cu=reserve, actual_cu=actual, api=SEARCH)
        if d.outcome != OK:
            await self._error(send, d, now, d.name)
            return
        await self.clock.sleep(self._draw_service_s(SIZE_METHOD))
        self.admission.settle(self.clock.now(), d)
        await self._reply(send, 200, {"items": req.items, "gas_used": int(sum(gas)),
                                      "cu": actual}, t=now)

    def _connection_closed(self, info: ConnectionInfo) -> None:
        if info.admitted:
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
        conn = self._conn(scope)
        now = self.clock.now()
        name = self._stream_of(self._api_of(scope, conn), scope["path"])
        if name is None:
            await self._deny(send, 404, "404", math.nan, now)
            return
        d = self.admission.handshake(now, name, key_ok=self._key_ok(scope))
        if d.outcome != OK:
            await self._deny(send, HTTP_STATUS[d.outcome], d.name, d.retry_after_s, now)
            return
        sock = _Socket(name, send, conn)
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
                    continue
                # The server is stopping: close with "going away" rather than hold the
                # shutdown until the client leaves.
                message.cancel()
                sock.closed_by_server = True
                self.sockets[name].pop(sock, None)
                self.admission.websocket_closed(self.clock.now(), clean=True,
                                                stale_expiry_s=0.0)
                sock.offer({"type": "websocket.close", "code": 1001, "reason": "stopping"})
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(writer, 1.0)
                break
        finally:
            stopping.cancel()
            self.sockets[name].pop(sock, None)
            if writer is not None and not sock.closed_by_server:
                writer.cancel()
            if not sock.closed_by_server:
                unclean = conn is not None and conn.tcp_closed
                self.admission.websocket_closed(self.clock.now(), clean=not unclean,
                                                stale_expiry_s=self._expiry())

    def _expiry(self) -> float:
        exp = self._stale
        if isinstance(exp, int | float):
            return float(exp)
        return exp.low + (exp.high - exp.low) * float(self._stale_rng.random())

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
            self.admission.websocket_closed(t, clean=True, stale_expiry_s=0.0)
            sock.offer({"type": "websocket.send", "text": json.dumps(
                {"error": "cu exhausted", "t_s": round(t, 6)})})
            sock.offer({"type": "websocket.close", "code": WS_EXHAUSTED_CODE,
                        "reason": "cu exhausted"})


async def _quiet(coro) -> None:
    """Send on a socket that may have gone away meanwhile (not the emulator's error)."""
    with contextlib.suppress(Exception):
        await coro
