"""Closed connections are freed within seconds (sim/live/garbage.py), over real sockets.

Every connection ends as a reference cycle; without the server's own collections a dead
one waits for CPython's next full collection, which in a long-running server comes
after hundreds of connections, each keeping its 256 KiB of TLS buffers (the soak's
memory creep). Automatic collection is switched off here so that only the server's
collections can free anything: the test fails on the old server (no collections), where
all 40 dead connections stay in memory.
"""

from __future__ import annotations

import asyncio
import gc
import time

from live_server import running_server

from sim.live import garbage, misbehave
from sim.live.connections import TrackedTCPServer

SLOW = """
[methods.svc_slow]
api = "rpc"
service_time = { dist = "constant", value = 0.2 }
"""


def _alive(kind: type) -> int:
    return sum(isinstance(o, kind) for o in gc.get_objects())


def test_dead_connections_are_collected_within_seconds(tmp_path, monkeypatch):
    monkeypatch.setattr(garbage, "COLLECT_EVERY_S", 0.3)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        # servers of earlier tests in this process (frozen by their own start-up) are not ours
        before = _alive(TrackedTCPServer)
        with running_server(tmp_path, SLOW, "Advanced bundle", 1.0) as server:
            args = (server.port, server.ca, "k1", "svc_slow")

            async def go():
                for i in range(40):  # four ways of leaving with a request unanswered
                    if i % 4 == 0:
                        await asyncio.to_thread(misbehave.killed, *args)
                    elif i % 4 == 1:
                        await asyncio.to_thread(misbehave.half_sent, *args)
                    elif i % 4 == 2:
                        await asyncio.to_thread(misbehave.never_reads, *args)
                    else:
                        await misbehave.client_timeout(*args)
            asyncio.run(go())
            # The server notices each close in its own time (seconds on a loaded machine);
            # a client killed under load may die before its TLS handshake, so the server
            # never saw it: what counts is that every connection it saw has ended.
            registry = server.app.registry
            deadline = time.monotonic() + 20
            while (len(registry) or registry.closed < registry.opened) \
                    and time.monotonic() < deadline:
                time.sleep(0.2)
            assert registry.opened >= 30, registry.opened
            assert len(registry) == 0 and registry.closed == registry.opened, \
                (registry.opened, registry.closed, len(registry))
            alive = _alive(TrackedTCPServer)
            while alive > before + 2 and time.monotonic() < deadline:
                time.sleep(0.2)
                alive = _alive(TrackedTCPServer)
            # At most what is still open (none of the 40; a client's own may linger).
            assert alive <= before + 2, (alive, before)
    finally:
        if enabled:
            gc.enable()
