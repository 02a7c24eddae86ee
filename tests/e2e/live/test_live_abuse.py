"""The live emulator against connections that take without giving: no key, headers never
finished, no flow-control window, streams cancelled as soon as opened.

The limits are the documented ones (docs/reference/emulator.md, ``sim/live/guard.py``
and ``sim/live/connections.py``), shortened here with ``monkeypatch`` so that each test
waits seconds, not the production values; the expected counts come from the spec (8.4.2:
32 streams per connection) and RFC 9113 (REFUSED_STREAM, GOAWAY ENHANCE_YOUR_CALM,
CVE-2023-44487), never from the emulator's own output. Every wait is bounded; no assert
is on how long something took.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

import h2.errors
import h2.events
import httpx
from live_server import running_server

from sim.live import connections, guard, misbehave
from sim.live.misbehave import rpc_body

SLOW_METHOD = """
[methods.svc_slow]
api = "rpc"
service_time = { dist = "constant", value = 300 }
"""
"""At time scale 100: 3 wall seconds of service, long enough to pile up streams."""


def _client(server) -> httpx.AsyncClient:
    return httpx.AsyncClient(http2=True, verify=ssl.create_default_context(cafile=server.ca),
                             timeout=20)


async def _call(server, method="svc_call"):
    async with _client(server) as c:
        return await c.post(server.url("/"), content=rpc_body(method),
                            headers=server.headers("rpc"), extensions=server.sni("rpc"))


def test_connections_without_a_key_time_out_idle_or_half_sent(tmp_path, monkeypatch):
    monkeypatch.setattr(guard, "UNKEYED_IDLE_S", 1.0)

    async def go(server):
        silent = await asyncio.gather(
            asyncio.to_thread(misbehave.silent, server.port, server.ca, limit_s=8),
            asyncio.to_thread(misbehave.silent, server.port, server.ca, alpn="http/1.1",
                              send=b"POST / HTTP/1.1\r\nHost: rpc.localhost\r\nX-Sl", limit_s=8))
        # A keyed connection is the account's: it stays open while idle.
        async with _client(server) as c:
            r = await c.post(server.url("/"), content=rpc_body(), headers=server.headers("rpc"),
                             extensions=server.sni("rpc"))
            await asyncio.sleep(3.0)
            again = await c.post(server.url("/"), content=rpc_body(),
                                 headers=server.headers("rpc"), extensions=server.sni("rpc"))
        return silent, r.status_code, again.status_code, server.app.registry.opened
    with running_server(tmp_path, "", "All 3 APIs", 1.0) as server:
        silent, first, again, opened = asyncio.run(go(server))
    assert silent == [True, True]  # both closed by the server within the wait
    assert (first, again) == (200, 200)
    assert opened == 3  # the keyed client used one connection throughout


def test_unkeyed_connections_beyond_the_cap_are_dropped_keyed_ones_are_not(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(guard, "MAX_UNKEYED", 4)

    async def go(server):
        ctx = misbehave.context(server.ca)
        ctx.set_alpn_protocols(["h2"])
        held = []
        for _ in range(10):  # ten connections that never send a request
            _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx,
                                                      server_hostname="rpc.localhost")
            held.append(writer)
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        registry = server.app.registry
        unkeyed, tcp_open = registry.unkeyed, len(registry)
        keyed = (await _call(server)).status_code  # a new keyed connection: served
        for w in held:
            w.close()
        return unkeyed, tcp_open, keyed, registry.dropped_over_cap
    with running_server(tmp_path, "", "All 3 APIs", 1.0) as server:
        unkeyed, tcp_open, keyed, dropped = asyncio.run(go(server))
    assert unkeyed <= 4 and tcp_open <= 4
    assert keyed == 200
    assert dropped >= 6


def test_a_reply_the_client_grants_no_window_for_is_given_up(tmp_path, monkeypatch):
    monkeypatch.setattr(connections, "FLOW_STALL_S", 1.0)

    async def go(server):
        events = await asyncio.to_thread(misbehave.no_window, server.port, server.ca, "k1",
                                         "svc_call", limit_s=10)
        health = (await _call(server)).status_code
        return events, health
    with running_server(tmp_path, "", "All 3 APIs", 1.0) as server:
        events, status = asyncio.run(go(server))
    resets = [e for e in events if isinstance(e, h2.events.StreamReset)]
    assert [e.error_code for e in resets] == [h2.errors.ErrorCodes.CANCEL]
    assert status == 200


def test_rapid_reset_is_bounded_by_the_stream_limit_then_goaway(tmp_path, caplog):
    caplog.set_level(logging.WARNING)

    async def go(server):
        lim = server.app.admission.limiter
        got = await asyncio.to_thread(misbehave.rapid_reset, server.port, server.ca, "k1",
                                      "svc_slow", streams=400, limit_s=10)
        admitted = sum(lim.window_stats().admitted)
        return got, admitted
    # Cancelled requests in their service time still hold their streams: at most 32
    # are ever in the server for this connection; one cancelled before it was decided
    # is not served; past the budget the connection is told to calm down. The GOAWAY
    # can still be lost on the wire (the client keeps writing after the server closed:
    # the server's TCP reset may discard it from the client's receive queue, 2 in 11
    # tries on this machine), so it must be seen in one of three connections; the
    # bounds must hold in every one.
    goaways = []
    for attempt in range(3):
        (tmp_path / str(attempt)).mkdir()
        with running_server(tmp_path / str(attempt), SLOW_METHOD, "Advanced bundle",
                            100.0) as server:
            got, admitted = asyncio.run(go(server))
        assert admitted <= misbehave.STREAMS_PER_CONNECTION
        assert got["answered"] == 0
        goaways.append(got["goaway"])
        if got["goaway"] is not None:
            break
    assert h2.errors.ErrorCodes.ENHANCE_YOUR_CALM in goaways
    assert set(goaways) <= {h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, None}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_streams_cancelled_in_their_service_time_still_count_against_32(tmp_path):
    async def go(server):
        got = await asyncio.to_thread(misbehave.reset_in_service, server.port, server.ca,
                                      "k1", "svc_slow", first=32, then=10, wait_s=0.5)
        admitted = sum(server.app.admission.limiter.window_stats().admitted)
        return got, admitted
    with running_server(tmp_path, SLOW_METHOD, "Advanced bundle", 100.0) as server:
        got, admitted = asyncio.run(go(server))
    # 32 in their 3-wall-second service time, cancelled: the 10 sent next find the
    # connection's 32 streams still busy and are refused (safe to retry), unbilled.
    assert got == {"refused": 10, "answered": 0}
    assert admitted == 32
