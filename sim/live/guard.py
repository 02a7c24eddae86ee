"""Caps and timeouts for connections that do not behave like the account's clients.

A connection belongs to no one until it carries a request with a valid ``X-Api-Key``
(:attr:`~sim.live.connections.ConnectionInfo.keyed`). Until then it costs the server
memory (its TLS buffers, ~300 KiB) and nothing else limits it, so:

* at most :data:`MAX_UNKEYED` such connections are open at once: a new one beyond
  (once its TLS handshake is done; a handshake must finish within
  :data:`HANDSHAKE_TIMEOUT_S`) makes the server drop the one of them idle the longest,
  or itself when all have a request in the server -- so that a client with a key still
  gets in during a key-less flood;
* one that has no request in the server and has not had one for :data:`UNKEYED_IDLE_S`
  wall seconds -- it never sent a request, never finished its headers (slowloris), or
  only asked for ``/healthz`` a while ago -- is dropped (:func:`sweep`).

Keyed connections are the account's: they count against its own limits (128 active,
430), and they are dropped only when the client stops reading (a stalled TCP write or a
reply stalled by HTTP/2 flow control, :mod:`.connections`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from typing import Any, Protocol


class ConnectionRegistry(Protocol):
    """What the guard reads of the server's connections
    (:class:`sim.live.connections.ConnectionRegistry` is one)."""

    unkeyed: int
    dropped_idle: int

    def all(self) -> Iterable[Any]: ...

    def ended(self, info: Any) -> None: ...

MAX_UNKEYED = 256
"""Connections open at once that have not presented a valid key (more are dropped)."""

UNKEYED_IDLE_S = 10.0
"""Wall seconds a connection without a valid key may be open with no request in the
server (never a complete header block, or none since its last reply) before it is
dropped."""

HANDSHAKE_TIMEOUT_S = 10.0
"""Wall seconds a TLS handshake may take."""

SWEEP_EVERY_S = 1.0


def idle_unkeyed(registry: ConnectionRegistry, now_unix: float,
                 idle_s: float | None = None) -> list:
    """The connections without a valid key idle for longer than ``idle_s``
    (default :data:`UNKEYED_IDLE_S`)."""
    limit = UNKEYED_IDLE_S if idle_s is None else idle_s
    return [info for info in registry.all()
            if not info.keyed and info.in_flight == 0 and not info.tcp_closed
            and now_unix - max(info.opened_unix, info.active_unix) > limit]


async def sweep(registry: ConnectionRegistry, stop: asyncio.Event) -> None:
    """Every :data:`SWEEP_EVERY_S`, drop the idle connections without a key, until
    ``stop`` is set."""
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), SWEEP_EVERY_S)
        for info in idle_unkeyed(registry, time.time()):
            registry.dropped_idle += 1
            info.abort()
            registry.ended(info)


def oldest_idle_unkeyed(registry: ConnectionRegistry, but):
    """The connection without a key, with no request in the server, open the longest
    (not ``but``); ``None`` if there is none."""
    idle = [i for i in registry.all()
            if i is not but and not i.keyed and i.in_flight == 0 and not i.tcp_closed]
    return min(idle, key=lambda i: max(i.opened_unix, i.active_unix), default=None)


def over_cap(registry: ConnectionRegistry) -> bool:
    """Whether a new connection would exceed :data:`MAX_UNKEYED` (it is counted already)."""
    return registry.unkeyed > MAX_UNKEYED
