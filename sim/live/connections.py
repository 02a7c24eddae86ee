"""What the emulator knows about each TCP connection: SNI, ALPN, admission, liveness.

ASGI gives an application requests, not connections: the scope carries the peer address
(``client``) and the HTTP version, but neither the TLS SNI nor when the connection
opens and closes. The per-account connection limits (spec 8.4.3-4: 430 beyond 128
active connections or 32 new ones per second per hostname), the 421 rule (RPC and
sizing need HTTP/2 *and* SNI) and the clean/unclean distinction of a websocket
disconnect all need them, so the emulator wraps hypercorn's connection handler
(:func:`tracking_connections`) -- hypercorn still speaks every byte of HTTP:

* the server's TLS context records the SNI of each handshake on its ``SSLObject``
  (an ``sni_callback``, :func:`record_sni`);
* :class:`TrackedTCPServer` registers the connection under its peer address when it
  starts, notes when the TCP stream ends (EOF or reset: before hypercorn tells the
  application that a websocket went away, so the application can tell a close frame
  from a dropped connection), and unregisters it when it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hypercorn.asyncio import run as hypercorn_run
from hypercorn.asyncio.tcp_server import MAX_RECV, TCPServer
from hypercorn.events import Closed, RawData
from hypercorn.utils import parse_socket_addr

_SNI_ATTR = "capsim_sni"


def record_sni(ssl_object, server_name: str | None, _context) -> None:
    """``SSLContext.sni_callback``: remember the client's SNI (``None`` when it sent none)."""
    setattr(ssl_object, _SNI_ATTR, server_name)


@dataclass
class ConnectionInfo:
    """One TCP connection as the emulator sees it.

    ``admitted`` is ``None`` until the connection's first HTTP request on an RPC or
    Search hostname asks the account's connection limits (then True, or False: every
    request on it gets 430). ``tcp_closed`` turns True as soon as the TCP stream ends.
    """

    peer: tuple
    sni: str | None
    alpn: str | None
    opened_unix: float
    admitted: bool | None = None
    tcp_closed: bool = False
    close: Callable[[], None] = field(default=lambda: None, repr=False)


class ConnectionRegistry:
    """Live connections by peer address; ``on_closed(info)`` is called when one ends."""

    def __init__(self, on_closed: Callable[[ConnectionInfo], None] | None = None) -> None:
        self._by_peer: dict[tuple, ConnectionInfo] = {}
        self.on_closed = on_closed
        self.opened = 0

    def add(self, info: ConnectionInfo) -> None:
        self._by_peer[info.peer] = info
        self.opened += 1

    def get(self, peer) -> ConnectionInfo | None:
        """The connection an ASGI scope's ``client`` belongs to."""
        return self._by_peer.get(tuple(peer)) if peer is not None else None

    def remove(self, peer: tuple) -> None:
        info = self._by_peer.pop(peer, None)
        if info is not None and self.on_closed is not None:
            self.on_closed(info)

    def __len__(self) -> int:
        return len(self._by_peer)


class TrackedTCPServer(TCPServer):
    """hypercorn's per-connection handler, registering the connection in ``registry``."""

    registry: ConnectionRegistry

    async def run(self) -> None:
        sock = self.writer.get_extra_info("socket")
        try:
            # asyncio sets TCP_NODELAY only on sockets created with IPPROTO_TCP; without
            # it a reply's header and body frames wait ~40 ms for a delayed ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer = parse_socket_addr(sock.family, sock.getpeername())
        except OSError:
            return await super().run()
        ssl_object = self.writer.get_extra_info("ssl_object")
        info = ConnectionInfo(
            peer=tuple(peer) if peer is not None else (),
            sni=getattr(ssl_object, _SNI_ATTR, None),
            alpn=ssl_object.selected_alpn_protocol() if ssl_object is not None else None,
            opened_unix=time.time(),
            close=lambda: self.loop.create_task(self._initiate_server_close()))
        self._info = info
        self.registry.add(info)
        try:
            await super().run()
        except* ssl.SSLError:
            pass  # a peer that vanished mid-TLS (an aborted or refused connection)
        except* asyncio.CancelledError:
            pass  # stopped after the grace period: end quietly, the server is going away
        finally:
            self.registry.remove(info.peer)

    async def _read_data(self) -> None:
        # hypercorn's loop, plus one line: mark the TCP stream ended *before* the
        # protocol learns of it, so a websocket's disconnect can tell a dropped
        # connection (no close frame) from a close handshake.
        while not self.reader.at_eof():
            try:
                data = await asyncio.wait_for(self.reader.read(MAX_RECV), self.config.read_timeout)
            except (ConnectionError, OSError, TimeoutError, ssl.SSLError):
                break
            else:
                await self.protocol.handle(RawData(data))
        info = getattr(self, "_info", None)
        if info is not None:
            info.tcp_closed = True
        await self.protocol.handle(Closed())
        # The peer is gone: hypercorn would otherwise keep the connection's task (and
        # our registration of it) until its keep-alive timer fired.
        await self.idle_task.stop()


@contextlib.contextmanager
def tracking_connections(registry: ConnectionRegistry) -> Iterator[None]:
    """While inside, hypercorn's asyncio worker hands each connection to a
    :class:`TrackedTCPServer` bound to ``registry``."""
    tracked = type("BoundTrackedTCPServer", (TrackedTCPServer,), {"registry": registry})
    original = hypercorn_run.TCPServer
    hypercorn_run.TCPServer = tracked
    try:
        yield
    finally:
        hypercorn_run.TCPServer = original
