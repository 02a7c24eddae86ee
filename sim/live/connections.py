"""What the emulator knows about each TCP connection, and the HTTP/2 details it fixes.

ASGI gives an application requests, not connections: the scope carries the peer address
(``client``) and the HTTP version, but neither the TLS SNI nor when the connection
opens and closes. The per-account connection limits (spec 8.4.3-4: 430 beyond 128
active connections or 32 new ones per second per hostname), the 421 rule (RPC and
sizing need HTTP/2 *and* SNI) and the clean/unclean distinction of a websocket
disconnect all need them, so the emulator runs hypercorn's connection handler as
:class:`TrackedTCPServer` -- hypercorn still speaks every byte of HTTP:

* the server's TLS context records the SNI of each handshake on its ``SSLObject``
  (an ``sni_callback``, :func:`record_sni`);
* the connection is registered under its peer address when it starts; the moment its
  TCP stream ends (EOF, reset, or a write stalled for :data:`WRITE_STALL_S`) it is
  marked closed and the account's slot is released (:meth:`ConnectionRegistry.ended`)
  -- whatever its requests are doing: one still in its service time finishes, is
  settled, and its reply goes nowhere.

Client behaviour hypercorn 0.18 does not survive on its own, fixed here:

* a reply to a connection that went away blocked forever in hypercorn's send buffers
  (its stream buffers are never released on a closed connection):
  :class:`CapsimH2Protocol` releases them when the connection closes;
* body chunks for a request whose application has finished (an early ``401`` or
  ``413``) blocked the connection's reader on a full queue: :class:`CapsimTaskGroup`
  drops them once the application has returned; the rest of the body of a stream
  answered before its body ended is read into the void up to :data:`DISCARD_BYTES`,
  then the stream is reset with ``NO_ERROR`` (RFC 9113 8.1), so the client stops;
* a request finishing after its connection ended restarted hypercorn's keep-alive timer,
  keeping the dead connection's objects for an hour: not any more;
* a HEADERS frame opening stream 33 (the client did not wait for SETTINGS) closed the
  whole connection with ``GOAWAY PROTOCOL_ERROR``: :class:`CapsimH2Connection` refuses
  only that stream with ``RST_STREAM REFUSED_STREAM`` (RFC 9113 5.1.2).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from hypercorn.asyncio import run as hypercorn_run
from hypercorn.asyncio.task_group import TaskGroup
from hypercorn.asyncio.tcp_server import MAX_RECV, TCPServer
from hypercorn.events import Closed, RawData, Updated
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.events import Body, Data, EndBody, EndData
from hypercorn.protocol.h2 import H2Protocol
from hypercorn.typing import ConnectionState
from hypercorn.utils import parse_socket_addr

from . import guard

_SNI_ATTR = "capsim_sni"

WRITE_STALL_S = 30.0
"""A connection whose replies cannot be written for this many wall seconds (the client
stopped reading) is dropped, and its account slot released."""

DISCARD_BYTES = 8 << 20
"""Body bytes of an already-answered request read and dropped before the stream is
reset (``NO_ERROR``), so that a client which sends its whole body before reading the
reply still gets it, and one sending more is stopped."""

_MAX_STREAMS = h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS


FLOW_STALL_S = 30.0
"""A reply whose body the client grants no HTTP/2 flow-control window for this many wall
seconds is given up (``RST_STREAM CANCEL``)."""

GOAWAY_LINGER_S = 0.5
"""Seconds between a GOAWAY for abuse and the close, so that the client reads it."""
RESET_BURST = 100
RESET_PER_S = 10.0
"""Streams a client may cancel while in the server, or open beyond the 32 allowed
(refused), on one connection: a burst of :data:`RESET_BURST`, then :data:`RESET_PER_S`
a second (HTTP/2 rapid reset, CVE-2023-44487); beyond, ``GOAWAY ENHANCE_YOUR_CALM``."""


class AbuseBudget:
    """A token bucket of :data:`RESET_BURST` tokens refilled at :data:`RESET_PER_S`."""

    def __init__(self) -> None:
        self.tokens = float(RESET_BURST)
        self.at: float | None = None

    def spend(self, now: float) -> bool:
        """Take a token; False when there is none."""
        if self.at is not None:
            self.tokens = min(float(RESET_BURST), self.tokens + (now - self.at) * RESET_PER_S)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


def record_sni(ssl_object, server_name: str | None, _context) -> None:
    """``SSLContext.sni_callback``: remember the client's SNI (``None`` when it sent none)."""
    setattr(ssl_object, _SNI_ATTR, server_name)


@dataclass
class ConnectionInfo:
    """One TCP connection as the emulator sees it.

    ``admitted`` is ``None`` until the connection's first request that passes the
    header checks (a valid key; HTTP/2 with SNI where required) on an RPC or Search
    hostname asks the account's connection limits (then True, or False: every request
    on it gets 430); ``account`` is the admission that admitted it (a reset makes a new
    one). ``tcp_closed`` turns True as soon as the TCP stream ends.
    """

    peer: tuple
    sni: str | None
    alpn: str | None
    opened_unix: float
    admitted: bool | None = None
    account: object = None
    tcp_closed: bool = False
    ended: bool = False
    read_unix: float = 0.0
    """Wall time the server last read bytes from the connection (0: none yet)."""
    keyed: bool = False
    """Whether a request on it presented a valid key (see :mod:`.guard`)."""
    in_flight: int = 0
    """Requests (and websockets) of this connection in the application now."""
    active_unix: float = 0.0
    """Wall time a request of it last entered or left the application (0: none yet)."""
    close: Callable[[], None] = field(default=lambda: None, repr=False)
    abort: Callable[[], None] = field(default=lambda: None, repr=False)


class ConnectionRegistry:
    """Live connections by peer address; ``on_closed(info)`` is called once when one ends."""

    def __init__(self, on_closed: Callable[[ConnectionInfo], None] | None = None) -> None:
        self._by_peer: dict[tuple, ConnectionInfo] = {}
        self.on_closed = on_closed
        self.opened = 0
        self.closed = 0
        self.unkeyed = 0
        """Open connections that have not presented a valid key (:mod:`.guard`)."""
        self.dropped_idle = 0
        self.dropped_over_cap = 0

    def add(self, info: ConnectionInfo) -> None:
        self._by_peer[info.peer] = info
        self.opened += 1
        if not info.keyed:
            self.unkeyed += 1

    def mark_keyed(self, info: ConnectionInfo) -> None:
        """``info`` carried a request with a valid key: it is no longer capped."""
        if not info.keyed:
            info.keyed = True
            if not info.ended:
                self.unkeyed -= 1

    def request_started(self, info: ConnectionInfo | None) -> None:
        if info is not None:
            info.in_flight += 1
            info.active_unix = time.time()

    def request_ended(self, info: ConnectionInfo | None) -> None:
        if info is not None:
            info.in_flight -= 1
            info.active_unix = time.time()

    def get(self, peer) -> ConnectionInfo | None:
        """The connection an ASGI scope's ``client`` belongs to."""
        return self._by_peer.get(tuple(peer)) if peer is not None else None

    def ended(self, info: ConnectionInfo) -> None:
        """The TCP stream of ``info`` ended: tell ``on_closed`` (once) and forget it."""
        info.tcp_closed = True
        if info.ended:
            return
        info.ended = True
        self.closed += 1
        if not info.keyed:
            self.unkeyed -= 1
        if self._by_peer.get(info.peer) is info:
            del self._by_peer[info.peer]
        if self.on_closed is not None:
            self.on_closed(info)

    def remove(self, peer: tuple) -> None:
        info = self._by_peer.get(peer)
        if info is not None:
            self.ended(info)

    def all(self) -> list[ConnectionInfo]:
        return list(self._by_peer.values())

    def __len__(self) -> int:
        return len(self._by_peer)


# -- HTTP/2 --------------------------------------------------------------------------


class CapsimH2Connection(h2.connection.H2Connection):
    """h2's connection, refusing a stream beyond MAX_CONCURRENT_STREAMS with
    ``RST_STREAM REFUSED_STREAM`` instead of failing the connection.

    The header block is still decoded (HPACK state is per connection); the stream is
    then reset and none of its events reach hypercorn."""

    refused_streams = 0
    running: set[int] = frozenset()  # the protocol's: streams whose application runs

    def busy_streams(self) -> int:
        """Streams open, plus streams the client reset whose request is still in the
        application (in its service time): both hold the server's work."""
        ghosts = sum(1 for sid in self.running
                     if sid not in self.streams or self.streams[sid].closed)
        return self.open_inbound_streams + ghosts

    def _receive_headers_frame(self, frame):
        if frame.stream_id in self.streams:
            return super()._receive_headers_frame(frame)
        limit = self.local_settings.max_concurrent_streams
        if self.busy_streams() < limit:
            return super()._receive_headers_frame(frame)
        current = self.local_settings._settings[_MAX_STREAMS]
        saved = current[0]
        current[0] = 2**31 - 1  # let h2 open (and decode) it, then refuse it
        try:
            frames, events = super()._receive_headers_frame(frame)
        finally:
            current[0] = saved
        self.reset_stream(frame.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
        self.refused_streams += 1
        return frames, [e for e in events if getattr(e, "stream_id", None) != frame.stream_id]


class CapsimH2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol with the fixes listed in the module docstring."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        old = self.connection
        conn = CapsimH2Connection(config=old.config)
        conn.DEFAULT_MAX_INBOUND_FRAME_SIZE = old.DEFAULT_MAX_INBOUND_FRAME_SIZE
        conn.local_settings = old.local_settings
        conn.running = self.running = set()
        # The task group tells when a stream's application returns (a stream the client
        # reset is gone from h2 and from hypercorn long before).
        self.task_group.on_app_done = self.running.discard
        self.connection = conn
        self._discarded: dict[int, int] = {}
        self.flow_stalled = 0
        self._abuse = AbuseBudget()
        self._calmed = False  # a GOAWAY for abuse was sent: the rest is read and dropped

    async def handle(self, event) -> None:
        if self._calmed and isinstance(event, RawData):
            return  # frames after our GOAWAY for abuse: read (no TCP reset) and dropped
        await super().handle(event)
        if isinstance(event, Closed):
            # Replies still being written (or waiting on flow control) go nowhere.
            for buffer in list(self.stream_buffers.values()):
                await buffer.close()

    async def _create_stream(self, request) -> None:
        self.running.add(request.stream_id)
        await super()._create_stream(request)

    async def stream_send(self, event) -> None:
        if not isinstance(event, Body | Data | EndBody | EndData):
            await super().stream_send(event)
            return
        try:
            async with asyncio.timeout(FLOW_STALL_S):
                await super().stream_send(event)
        except TimeoutError:
            # The client granted no flow-control window for FLOW_STALL_S: give up on
            # this reply (RST_STREAM CANCEL) rather than hold it for ever.
            await self._give_up(event.stream_id)

    async def _give_up(self, sid: int) -> None:
        self.flow_stalled += 1
        with contextlib.suppress(h2.exceptions.ProtocolError, KeyError):
            self.connection.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        buffer = self.stream_buffers.pop(sid, None)
        if buffer is not None:
            await buffer.close()
            with contextlib.suppress(Exception):
                self.priority.remove_stream(sid)
        await self._flush()

    async def _abused(self, what: str) -> bool:
        """Count a reset or refused stream; past the budget, GOAWAY ENHANCE_YOUR_CALM and
        close the connection (True)."""
        if self._abuse.spend(time.monotonic()):
            return False
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.connection.close_connection(h2.errors.ErrorCodes.ENHANCE_YOUR_CALM,
                                             additional_data=what.encode())
        await self._flush()
        self._calmed = True
        # Closing a socket with the client's frames still unread sends a TCP reset, and a
        # reset can overtake the GOAWAY in the client's receive queue: let it arrive first.
        await asyncio.sleep(GOAWAY_LINGER_S)
        await self.handle(Closed())  # its streams, and the send task, end here
        await self.send(Closed())
        return True

    async def _handle_events(self, events) -> None:
        # One event at a time, each looked at when its turn comes: a stream opened by an
        # earlier event of the same batch must exist when its body arrives, and one may
        # have been answered (and removed) meanwhile -- its application need not read
        # the body before it answers 401 or 413.
        refused = self.connection.refused_streams
        for event in events:
            if self.closed:
                return
            # A client cancelling a request it sent (its service goes on, billed, and
            # holds one of the connection's streams until it ends) spends the budget.
            if isinstance(event, h2.events.StreamReset) and event.remote_reset \
                    and event.stream_id in self.running and await self._abused("reset"):
                return
            if (isinstance(event, h2.events.DataReceived | h2.events.StreamEnded)
                    and event.stream_id not in self.streams):
                # Body of a stream already answered: discard it, but give the
                # connection's flow-control window back.
                if isinstance(event, h2.events.DataReceived):
                    self._discard(event)
                else:
                    self._discarded.pop(event.stream_id, None)
                await self._flush()
                continue
            await super()._handle_events([event])
        for _ in range(self.connection.refused_streams - refused):
            if await self._abused("streams refused"):
                return

    def _discard(self, event) -> None:
        sid = event.stream_id
        with contextlib.suppress(h2.exceptions.ProtocolError, KeyError):
            self.connection.acknowledge_received_data(event.flow_controlled_length, sid)
            stream = self.connection.streams.get(sid)
            if stream is None or stream.closed or sid in self.stream_buffers:
                return
            # Answered already: read the rest of the body into the void (clients such
            # as httpx read the reply only once they have sent it all), up to
            # DISCARD_BYTES; then ask the client to stop (RFC 9113 8.1: RST_STREAM
            # NO_ERROR after a complete response).
            seen = self._discarded.get(sid, 0) + event.flow_controlled_length
            if seen <= DISCARD_BYTES:
                self._discarded[sid] = seen
                return
            self._discarded.pop(sid, None)
            self.connection.reset_stream(sid, h2.errors.ErrorCodes.NO_ERROR)

class CapsimProtocolWrapper(ProtocolWrapper):
    def __init__(self, app, config, context, task_group, state, ssl_, client, server, send,
                 alpn_protocol=None) -> None:
        super().__init__(app, config, context, task_group, state, ssl_, client, server, send,
                         alpn_protocol)
        if alpn_protocol == "h2":
            self.protocol = CapsimH2Protocol(app, config, context, task_group, state, ssl_,
                                             client, server, send)


# -- the application's inbox ------------------------------------------------------------


class _Inbox:
    """An application's receive queue that stops taking messages once it has returned."""

    def __init__(self, size: int) -> None:
        self.queue: asyncio.Queue = asyncio.Queue(size)
        self.closed = False
        self.disconnected = False
        """The client is gone (or cancelled the stream): see :func:`client_gone`."""

    async def put(self, message) -> None:
        if message.get("type") in ("http.disconnect", "websocket.disconnect"):
            self.disconnected = True
        if not self.closed:
            await self.queue.put(message)

    async def get(self):
        return await self.queue.get()

    def close(self) -> None:
        self.closed = True
        while not self.queue.empty():  # wake any put blocked on a full queue
            self.queue.get_nowait()


async def _handle(app, config, scope, inbox: _Inbox, send, sync_spawn, call_soon,
                  done: Callable[[], None] | None = None) -> None:
    try:
        await app(scope, inbox.get, send, sync_spawn, call_soon)
    except asyncio.CancelledError:
        raise
    except Exception:
        await config.log.exception("Error in ASGI Framework")
    finally:
        inbox.close()
        if done is not None:
            done()
        await send(None)


def client_gone(receive) -> bool:
    """Whether the client of a request whose ``receive`` this is has cancelled it (an
    HTTP/2 ``RST_STREAM``) or gone away -- without taking a message from the queue."""
    inbox = getattr(receive, "__self__", None)
    return isinstance(inbox, _Inbox) and inbox.disconnected


class CapsimTaskGroup(TaskGroup):
    """hypercorn's task group whose application inboxes are :class:`_Inbox`; it calls
    ``on_app_done(stream_id)`` when an HTTP/2 stream's application returns."""

    on_app_done: Callable[[int], None] | None = None

    async def spawn_app(self, app, config, scope, send):
        inbox = _Inbox(config.max_app_queue_size)

        def _call_soon(func: Callable, *args: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(func(*args), self._loop).result()

        sid = getattr(getattr(send, "__self__", None), "stream_id", None)
        done = partial(self.on_app_done, sid) \
            if self.on_app_done is not None and sid is not None else None
        self.spawn(_handle, app, config, scope, inbox, send,
                   partial(self._loop.run_in_executor, None), _call_soon, done)
        return inbox.put


# -- the connection -------------------------------------------------------------------


class TrackedTCPServer(TCPServer):
    """hypercorn's per-connection handler (its ``run``, with the classes above),
    registering the connection in ``registry``."""

    registry: ConnectionRegistry

    async def run(self) -> None:
        sock = self.writer.get_extra_info("socket")
        try:
            # asyncio sets TCP_NODELAY only on sockets created with IPPROTO_TCP; without
            # it a reply's header and body frames wait ~40 ms for a delayed ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client = parse_socket_addr(sock.family, sock.getpeername())
            server = parse_socket_addr(sock.family, sock.getsockname())
        except OSError:
            await self._close()
            return
        ssl_object = self.writer.get_extra_info("ssl_object")
        alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else "http/1.1"
        info = ConnectionInfo(
            peer=tuple(client) if client is not None else (),
            sni=getattr(ssl_object, _SNI_ATTR, None), alpn=alpn, opened_unix=time.time(),
            close=lambda: self.loop.create_task(self._initiate_server_close()),
            abort=self._abort)
        self._info = info
        self.registry.add(info)
        if guard.over_cap(self.registry):
            # Too many connections that belong to no account: drop the oldest idle one
            # (a client with a key still gets in during a key-less flood), else this one.
            victim = guard.oldest_idle_unkeyed(self.registry, info)
            self.registry.dropped_over_cap += 1
            if victim is None:
                self.registry.ended(info)
                self._abort()
                return
            victim.abort()
            self.registry.ended(victim)
        stopping = False
        try:
            try:
                async with CapsimTaskGroup(self.loop) as task_group:
                    self._task_group = task_group
                    self.protocol = CapsimProtocolWrapper(
                        self.app, self.config, self.context, task_group,
                        ConnectionState(self.state), ssl_object is not None, client, server,
                        self.protocol_send, alpn)
                    await self.protocol.initiate()
                    await self.idle_task.restart(task_group, self._idle_timeout)
                    await self._read_data()
            except* (OSError, ssl.SSLError):
                pass  # a peer that vanished mid-TLS (an aborted or refused connection)
            except* asyncio.CancelledError:
                # Stopped after the grace period: end quietly, the server is going away.
                stopping = True
        finally:
            self.registry.ended(info)
            if stopping:
                # A TLS close waits up to 30 s for the peer's close_notify, which an idle
                # client pool never sends: SIGTERM would take 30 s. Drop it instead.
                self._abort()
            else:
                with contextlib.suppress(Exception):  # e.g. data after the TLS close_notify
                    await self._close()

    def _abort(self) -> None:
        """Drop the connection at once (no GOAWAY, no TLS close_notify)."""
        with contextlib.suppress(Exception):
            self.writer.transport.abort()

    async def protocol_send(self, event) -> None:
        if isinstance(event, RawData):
            async with self.send_lock:
                try:
                    self.writer.write(event.data)
                    transport = self.writer.transport
                    if transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]:
                        # The client is not reading: wait, but not for ever.
                        await asyncio.wait_for(self.writer.drain(), WRITE_STALL_S)
                    else:
                        await self.writer.drain()
                except (ConnectionError, RuntimeError, TimeoutError, OSError):
                    self._abort()
                    self._ended()
                    await self.protocol.handle(Closed())
        elif isinstance(event, Updated) and self._info.tcp_closed:
            # A request finishing after its connection ended: no keep-alive timer (it
            # would keep the dead connection's objects for keep_alive_timeout).
            await self.idle_task.stop()
        else:
            await super().protocol_send(event)

    def _ended(self) -> None:
        info = getattr(self, "_info", None)
        if info is not None:
            self.registry.ended(info)

    async def _read_data(self) -> None:
        # hypercorn's loop, plus: mark the TCP stream ended (and release the account's
        # slot) *before* the protocol learns of it, so a websocket's disconnect can tell
        # a dropped connection (no close frame) from a close handshake.
        while not self.reader.at_eof():
            try:
                data = await asyncio.wait_for(self.reader.read(MAX_RECV), self.config.read_timeout)
            except (ConnectionError, OSError, TimeoutError, ssl.SSLError):
                break
            else:
                self._info.read_unix = time.time()  # the request's arrival, see app._arrival
                await self.protocol.handle(RawData(data))
        self._ended()
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


__all__ = ["ConnectionInfo", "ConnectionRegistry", "client_gone", "record_sni",
           "tracking_connections"]
