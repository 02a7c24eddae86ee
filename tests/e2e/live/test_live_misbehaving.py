"""The live emulator against clients that misbehave, over real sockets on loopback.

Aborted requests (killed clients, client timeouts, half-sent bodies, clients that
never read), key-less bursts, a 200 MB body and 33 streams opened before the server's
SETTINGS arrive. Expected values come from the spec (8.4: 32 streams per connection,
128 connections and 32 new ones per second per account), RFC 9113 (REFUSED_STREAM) and
the documented limits (1 MiB bodies), never from the emulator's own output. Every loop
is bounded; no assert is on how long something took.
"""

from __future__ import annotations

import asyncio
import json

import h2.errors
import h2.events
import httpx
import psutil
import pytest
from live_server import running_server

from sim.live import misbehave
from sim.live.app import MAX_BODY_BYTES
from sim.live.connections import DISCARD_BYTES
from sim.live.misbehave import rpc_body

SLOW_METHOD = """
[methods.svc_slow]
api = "rpc"
service_time = { dist = "constant", value = 300 }
"""
"""At time scale 100, 3 wall seconds of service: long enough to abort during it."""


def _ctx(server):
    return misbehave.context(server.ca)


def _client(server, **kw) -> httpx.AsyncClient:
    return httpx.AsyncClient(http2=True, verify=_ctx(server), timeout=kw.pop("timeout", 20), **kw)


async def _health(server) -> dict:
    async with _client(server) as c:
        return (await c.get(server.url("/healthz"), headers={"host": "rpc.localhost"})).json()


async def _rpc(client, server, method="svc_call", key="k1", body=None, host="rpc"):
    return await client.post(server.url("/"), content=body or rpc_body(method),
                             headers=server.headers(host, key), extensions=server.sni(host))


async def _wait_health(server, ok, limit: int = 100) -> dict:
    health = await _health(server)
    for _ in range(limit):
        if ok(health):
            break
        await asyncio.sleep(0.05)
        health = await _health(server)
    return health


def test_aborted_requests_release_their_connections_and_are_still_settled(tmp_path):
    async def go(server):
        lim = server.app.admission.limiter
        # 150 connections, each closed with a request unanswered, in four ways.
        args = (server.port, server.ca, "k1", "svc_slow")
        for i in range(150):
            kind = i % 4
            if kind == 0:  # killed client: RST while the request is in its service time
                await asyncio.to_thread(misbehave.killed, *args, after_s=0.01)
            elif kind == 1:  # half-sent body: no END_STREAM, then the client goes away
                await asyncio.to_thread(misbehave.half_sent, *args, after_s=0.01)
            elif kind == 2:  # client timeout shorter than the service time
                assert await misbehave.client_timeout(*args)
            else:  # never reads: sends, then closes without reading a byte
                await asyncio.to_thread(misbehave.never_reads, *args, streams=1, after_s=0.01)
        health = await _wait_health(server, lambda h: h["connections"]["account_active"] == 0)
        stats = lim.window_stats()
        admitted_cu, settled_cu = 10 * sum(stats.admitted), sum(stats.settled_cu)
        assert health["connections"]["account_active"] == 0
        assert health["connections"]["tcp_open"] <= 1  # at most the health check's own
        # Released while requests were still in their service time (unanswered):
        assert 0 < settled_cu < admitted_cu
        # 3 of the 4 ways send a whole request (113); a killed client's RST may discard
        # its request unread (the kernel drops it), the other 75 are surely reserved.
        admitted = sum(stats.admitted)
        assert 75 <= admitted <= 113 and sum(stats.throttled) == 0
        async with _client(server) as c:  # a well-behaved client is served at once
            r = await _rpc(c, server)
            assert r.status_code == 200 and r.json()["result"] == "0x"
        # ... and every reservation is settled after its service time.
        for _ in range(200):
            stats = lim.window_stats()
            if sum(stats.settled_cu) >= 10 * admitted + 20:
                break
            await asyncio.sleep(0.05)
        assert sum(stats.settled_cu) == pytest.approx(10 * admitted + 20)
        assert (await _health(server))["connections"]["account_active"] == 0
    with running_server(tmp_path, SLOW_METHOD, "Advanced bundle", 100.0) as server:
        asyncio.run(go(server))


def test_connections_without_a_valid_key_belong_to_no_account(tmp_path):
    async def go(server):
        # 40 HTTP/2 connections with a wrong key, 10 with none, 37 over HTTP/1.1: all
        # within one service second (scale 0.05: 20 wall seconds).
        statuses = await misbehave.keyless(server.port, server.ca, "svc_pendingBlock",
                                           keys=tuple(None if i % 5 == 0 else "bad"
                                                      for i in range(50)))
        for _ in range(32):
            statuses.append(await misbehave.http11(server.port, server.ca, "k1",
                                                   "svc_pendingBlock"))
        for _ in range(5):  # HTTP/1.1 with the key, on a path that needs no HTTP/2
            async with httpx.AsyncClient(http1=True, http2=False, verify=_ctx(server)) as c:
                r = await c.get(server.url("/nothing"), headers=server.headers("rpc"),
                                extensions=server.sni("rpc"))
                statuses.append(r.status_code)
        assert statuses == [401] * 50 + [421] * 32 + [404] * 5
        assert (await _health(server))["connections"]["account_active"] == 0
        # 32 real connections in the same second are all admitted; the 33rd is not.
        clients = [_client(server) for _ in range(33)]
        try:
            real = [(await _rpc(c, server, "svc_pendingBlock")).status_code for c in clients]
        finally:
            for c in clients:
                await c.aclose()
        assert real == [200] * 32 + [430]
    with running_server(tmp_path, "", "All 3 APIs", 0.05) as server:
        asyncio.run(go(server))


def test_the_key_is_checked_before_anything_else(tmp_path):
    async def go(server):
        async with _client(server) as c:
            # Without a valid key nothing can be probed: not methods, paths, bodies.
            for key in (None, "bad"):
                assert (await _rpc(c, server, "no_such_method", key=key)).status_code == 401
                assert (await _rpc(c, server, key=key, body=b"{not json")).status_code == 401
                r = await c.post(server.url("/v2/nothing"), content=b"{}",
                                 headers=server.headers("search", key),
                                 extensions=server.sni("search"))
                assert r.status_code == 401
                r = await c.get(server.url("/anything"), headers=server.headers("rpc", key),
                                extensions=server.sni("rpc"))
                assert r.status_code == 401
            # With the key the same requests get their own answers.
            r = await _rpc(c, server, "no_such_method")
            assert r.status_code == 200 and r.json()["error"]["code"] == -32601
            r = await c.post(server.url("/v2/nothing"), content=b"{}",
                             headers=server.headers("search"), extensions=server.sni("search"))
            assert r.status_code == 404
    with running_server(tmp_path, "", "All 3 APIs", 0.05) as server:
        asyncio.run(go(server))


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def test_a_200_mb_body_is_refused_while_it_streams_in(tmp_path):
    total = 200 * 2**20

    async def go(server):
        base = peak = _rss_mb()
        for key, expected in (("k1", 413), ("bad", 401)):
            status, reset, sent = await asyncio.to_thread(misbehave.upload, server.port,
                                                          server.ca, total, key)
            peak = max(peak, _rss_mb())
            # Answered, then the rest refused: RST_STREAM NO_ERROR after at most
            # MAX_BODY_BYTES + DISCARD_BYTES and a few flow-control windows.
            assert (status, reset) == (expected, h2.errors.ErrorCodes.NO_ERROR)
            assert sent < MAX_BODY_BYTES + DISCARD_BYTES + 4 * 2**20
        async with _client(server) as c:
            # httpx sends the whole body before it reads: a 2 MiB upload still gets 413.
            async def body():
                for _ in range(32):
                    yield b" " * 65536
            r = await c.post(server.url("/"), content=body(), headers=server.headers("rpc"),
                             extensions=server.sni("rpc"))
            assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
            # An announced Content-Length over the limit: refused before a byte is read.
            r = await c.post(server.url("/"), content=b"x" * (MAX_BODY_BYTES + 1),
                             headers=server.headers("rpc"), extensions=server.sni("rpc"))
            assert r.status_code == 413
            assert (await _rpc(c, server)).status_code == 200  # the connection still serves
        peak = max(peak, _rss_mb())
        # Client and server share this process: 200 MB held anywhere would show.
        assert peak - base < 64
        assert (await _health(server))["connections"]["account_active"] == 0
    with running_server(tmp_path, "", "All 3 APIs", 0.05) as server:
        asyncio.run(go(server))


def test_json_rpc_errors_notifications_and_content_type(tmp_path):
    async def go(server):
        lim = server.app.admission.limiter
        async with _client(server) as c:
            r = await _rpc(c, server, body=b'{"jsonrpc": "2.0", "id": 7, "method": ')
            assert r.status_code == 200
            assert r.json() == {"jsonrpc": "2.0", "id": None,
                                "error": {"code": -32700, "message": "parse error"}}
            cases = [({"jsonrpc": "1.0", "id": 1, "method": "svc_call"}, 1),
                     ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "svc_call"}, None),
                     ({"jsonrpc": "2.0", "id": 2, "method": "svc_call", "params": "x"}, 2),
                     ([{"jsonrpc": "2.0", "id": 3, "method": "svc_call"}], None),
                     (5, None)]
            for payload, ident in cases:
                r = await _rpc(c, server, body=json.dumps(payload).encode())
                assert r.status_code == 200, payload
                assert r.json()["error"]["code"] == -32600 and r.json()["id"] == ident, payload
            # ids: numbers and strings are echoed as sent; params as an object is accepted
            for ident in (12, "abc", 1.5):
                r = await _rpc(c, server, body=json.dumps(
                    {"jsonrpc": "2.0", "id": ident, "method": "svc_call", "params": {}}).encode())
                assert r.json() == {"jsonrpc": "2.0", "id": ident, "result": "0x"}
            assert sum(lim.window_stats().reserved_cu) == 60  # 3 x 20 CU
            # A notification is served and billed, but not answered (204, no body).
            r = await _rpc(c, server, body=b'{"jsonrpc": "2.0", "method": "svc_call"}')
            assert r.status_code == 204 and r.content == b""
            assert sum(lim.window_stats().reserved_cu) == 80
            # Content-Type other than application/json: 415 (none at all is accepted).
            h = server.headers("rpc") | {"content-type": "text/plain"}
            r = await c.post(server.url("/"), content=rpc_body(), headers=h,
                             extensions=server.sni("rpc"))
            assert r.status_code == 415
            h = server.headers("rpc") | {"content-type": "application/json; charset=utf-8"}
            r = await c.post(server.url("/"), content=rpc_body(), headers=h,
                             extensions=server.sni("rpc"))
            assert r.status_code == 200
    with running_server(tmp_path, "", "All 3 APIs", 0.05) as server:
        asyncio.run(go(server))


def test_33_streams_before_settings_refuse_only_the_extra_one(tmp_path):
    def go(server):
        ids, events = misbehave.streams_before_settings(server.port, server.ca, "k1",
                                                        "svc_slow", streams=33)
        assert not any(isinstance(e, h2.events.ConnectionTerminated) for e in events)
        resets = [e for e in events if isinstance(e, h2.events.StreamReset)]
        assert [(e.stream_id, e.error_code) for e in resets] == [
            (ids[-1], h2.errors.ErrorCodes.REFUSED_STREAM)]
        statuses = {e.stream_id: dict(e.headers)[b":status"] for e in events
                    if isinstance(e, h2.events.ResponseReceived)}
        assert statuses == {sid: b"200" for sid in ids[:32]}
    # svc_slow lasts 300 service s: at scale 1000, 0.3 wall s, all 32 still open when
    # the 33rd arrives.
    with running_server(tmp_path, SLOW_METHOD, "Advanced bundle", 1000.0) as server:
        go(server)
