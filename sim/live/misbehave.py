"""Clients that misbehave, as real ones do, against ``capsim serve`` (or any service).

The emulator's tests over real sockets and its soak (``benchmarks/bench_emulator_soak.py``)
use these; a developer can point them at a server to see it survive ordinary client
behaviour. Each opens its own TLS connection to ``127.0.0.1:port`` (trusting ``ca``) with
SNI ``host``:

* :func:`killed` -- a request in its service time, then a TCP reset (a killed process);
* :func:`half_sent` -- a body cut short, then the client goes away;
* :func:`never_reads` -- requests sent, then the socket closed without reading a byte;
* :func:`streams_before_settings` -- 33 streams opened before the server's SETTINGS;
* :func:`upload` -- a body streamed as flow control allows, until the server answers;
* :func:`client_timeout` -- an httpx client whose timeout is shorter than the service time;
* :func:`keyless` -- connections with a wrong key or none;
* :func:`http11` -- an HTTP/1.1 client on RPC (421);
* :func:`rapid_reset` -- requests cancelled (``RST_STREAM``) as soon as sent;
* :func:`reset_in_service` -- requests cancelled in their service time, then more sent;
* :func:`no_window` -- a client that grants no flow-control window for replies;
* :func:`silent` -- a TLS connection that sends nothing, or half a header block.

The raw ones (:class:`RawH2`, the ``h2`` library over a blocking socket) are blocking:
run them in a thread (``asyncio.to_thread``) from async code. Every loop is bounded.
"""

from __future__ import annotations

import json
import socket
import ssl
import struct
import time
from collections.abc import Callable

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import httpx

STREAMS_PER_CONNECTION = 32
"""Spec 8.4.2: about 32 active streams per connection (the 33rd is refused)."""


def rpc_body(method: str = "svc_call", ident: int = 1) -> bytes:
    """A JSON-RPC 2.0 request for ``method`` with id ``ident``, as bytes."""
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": []}).encode()


def context(ca: str) -> ssl.SSLContext:
    """A client TLS context trusting the CA at ``ca``."""
    return ssl.create_default_context(cafile=ca)


class RawH2:
    """A raw HTTP/2 client over TLS (the ``h2`` library), for what httpx will not do:
    send without reading, cut a body short, reset the TCP connection."""

    def __init__(self, port: int, ca: str, host: str = "rpc.localhost",
                 timeout: float = 10.0) -> None:
        ctx = context(ca)
        ctx.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock = ctx.wrap_socket(raw, server_hostname=host)
        self.authority = f"{host}:{port}"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.flush()

    def flush(self) -> None:
        """Send what the HTTP/2 state machine has queued."""
        self.sock.sendall(self.conn.data_to_send())

    def headers(self, sid: int, *, key: str | None, path: str = "/") -> None:
        """Queue a POST's HEADERS on stream ``sid`` (no X-Api-Key when ``key`` is None)."""
        hdrs = [(":method", "POST"), (":path", path), (":scheme", "https"),
                (":authority", self.authority), ("content-type", "application/json")]
        if key is not None:
            hdrs.append(("x-api-key", key))
        self.conn.send_headers(sid, hdrs)

    def request(self, sid: int, body: bytes, *, key: str | None, end: bool = True,
                path: str = "/", flush: bool = True) -> None:
        """HEADERS and ``body`` on stream ``sid`` (``end``: the body is complete)."""
        self.headers(sid, key=key, path=path)
        self.conn.send_data(sid, body, end_stream=end)
        if flush:
            self.flush()

    def events(self, until: Callable[[list], bool], limit_s: float = 20.0) -> list:
        """Read until ``until(events)`` holds, the server closes, or ``limit_s`` passes."""
        got: list = []
        deadline = time.monotonic() + limit_s
        while not until(got) and time.monotonic() < deadline:
            data = self.sock.recv(65536)
            if not data:
                break
            got.extend(self.conn.receive_data(data))
            self.flush()
        return got

    def kill(self) -> None:
        """Close as a killed process's socket does: RST, no TLS close_notify."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self) -> None:
        """Close the socket without an HTTP/2 GOAWAY."""
        self.sock.close()


# -- blocking misbehaviours (run them in a thread from async code) ---------------------


def killed(port: int, ca: str, key: str, method: str, *, after_s: float = 0.02) -> None:
    """Send a whole request for ``method``, then reset the TCP connection ``after_s``
    later (while the request is in its service time when that is longer)."""
    c = RawH2(port, ca)
    c.request(1, rpc_body(method), key=key)
    time.sleep(after_s)
    c.kill()


def half_sent(port: int, ca: str, key: str, method: str, *, cut: int = 20,
              after_s: float = 0.02) -> None:
    """Send the first ``cut`` bytes of a body without END_STREAM, then go away."""
    c = RawH2(port, ca)
    c.request(1, rpc_body(method)[:cut], key=key, end=False)
    time.sleep(after_s)
    c.close()


def never_reads(port: int, ca: str, key: str, method: str, *, streams: int = 3,
                after_s: float = 0.05) -> None:
    """Send ``streams`` requests, then close without reading a byte of any reply."""
    c = RawH2(port, ca)
    for i in range(streams):
        c.request(1 + 2 * i, rpc_body(method, 1 + 2 * i), key=key)
    time.sleep(after_s)
    c.close()


def streams_before_settings(port: int, ca: str, key: str, method: str, *,
                            streams: int = STREAMS_PER_CONNECTION + 1,
                            limit_s: float = 30.0) -> tuple[list[int], list]:
    """Open ``streams`` streams at once, before reading the server's SETTINGS, and read
    until each has ended or been reset (or the connection ends): ``(stream ids, events)``."""
    c = RawH2(port, ca)
    try:
        ids = [1 + 2 * i for i in range(streams)]
        for sid in ids:
            c.request(sid, rpc_body(method, sid), key=key, flush=False)
        c.flush()

        def done(events) -> bool:
            ended = {e.stream_id for e in events
                     if isinstance(e, h2.events.StreamEnded | h2.events.StreamReset)}
            return len(ended) == len(ids) or any(
                isinstance(e, h2.events.ConnectionTerminated) for e in events)
        return ids, c.events(done, limit_s=limit_s)
    finally:
        c.close()


def upload(port: int, ca: str, total: int, key: str | None, *,
           host: str = "rpc.localhost") -> tuple[int | None, int | None, int]:
    """Stream ``total`` bytes of body on one stream, as flow control allows and without
    looking at replies while the window is open (as a client uploading does), until the
    server answers and resets the stream: ``(status, reset code, bytes sent)``."""
    c = RawH2(port, ca, host)
    try:
        c.headers(1, key=key)
        c.flush()
        chunk = b" " * 16384
        sent, status, reset, ended = 0, None, None, False
        for _ in range(total // len(chunk) + 10_000):  # bounded
            if reset is not None or (ended and sent >= total):
                break
            window = min(c.conn.local_flow_control_window(1), len(chunk), total - sent)
            if window > 0:
                c.conn.send_data(1, chunk[:window], end_stream=sent + window >= total)
                sent += window
                c.flush()
                continue
            data = c.sock.recv(65536)
            if not data:
                break
            for e in c.conn.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived):
                    status = int(dict(e.headers)[b":status"])
                elif isinstance(e, h2.events.StreamReset):
                    reset = e.error_code
                elif isinstance(e, h2.events.StreamEnded):
                    ended = True
            c.flush()
        return status, reset, sent
    finally:
        c.close()


# -- async misbehaviours (httpx) -------------------------------------------------------


def headers(port: int, host: str, key: str | None) -> dict:
    """Request headers for ``host`` (``rpc``, ``search``) on ``port``, with ``key``."""
    h = {"host": f"{host}.localhost:{port}", "content-type": "application/json"}
    if key is not None:
        h["x-api-key"] = key
    return h


async def _post(client: httpx.AsyncClient, port: int, key: str | None, method: str,
                host: str = "rpc") -> httpx.Response:
    return await client.post(f"https://127.0.0.1:{port}/", content=rpc_body(method),
                             headers=headers(port, host, key),
                             extensions={"sni_hostname": f"{host}.localhost"})


async def client_timeout(port: int, ca: str, key: str, method: str, *,
                         timeout_s: float = 0.05) -> bool:
    """Call ``method`` with a client timeout of ``timeout_s`` (shorter than its service
    time); True when the client did time out."""
    async with httpx.AsyncClient(http2=True, verify=context(ca), timeout=timeout_s) as c:
        try:
            await _post(c, port, key, method)
        except httpx.TimeoutException:
            return True
        return False


async def keyless(port: int, ca: str, method: str,
                  keys: tuple[str | None, ...] = ("wrong", None, "also-wrong", None, "wrong")
                  ) -> list[int]:
    """One new HTTP/2 connection per entry of ``keys`` (None: no X-Api-Key), each
    calling ``method``: the statuses."""
    statuses = []
    for key in keys:
        async with httpx.AsyncClient(http2=True, verify=context(ca), timeout=5) as c:
            statuses.append((await _post(c, port, key, method)).status_code)
    return statuses


async def http11(port: int, ca: str, key: str, method: str) -> int:
    """Call ``method`` over HTTP/1.1 on a new connection: the status (421 for RPC)."""
    async with httpx.AsyncClient(http1=True, http2=False, timeout=5,
                                 verify=context(ca)) as c:
        return (await _post(c, port, key, method)).status_code


def rapid_reset(port: int, ca: str, key: str, method: str, *, streams: int = 200,
                limit_s: float = 20.0) -> dict:
    """Open ``streams`` streams one after another on one connection, each reset
    (``RST_STREAM CANCEL``) right after its request is sent (HTTP/2 rapid reset), then
    read until the server ends the connection or ``limit_s`` passes: counts of
    ``refused`` streams, ``answered`` ones, and the ``goaway`` error code (or None)."""
    c = RawH2(port, ca)
    c.sock.settimeout(0.0)
    got: list = []
    try:
        for i in range(streams):
            sid = 1 + 2 * i
            try:
                c.request(sid, rpc_body(method, sid), key=key, flush=False)
                c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
                c.flush()
            except (h2.exceptions.ProtocolError, OSError):
                break
            try:
                data = c.sock.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                continue
            except OSError:
                break
            if not data:
                break
            got.extend(c.conn.receive_data(data))
        c.sock.settimeout(1.0)
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and not any(
                isinstance(e, h2.events.ConnectionTerminated) for e in got):
            try:
                data = c.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            got.extend(c.conn.receive_data(data))
    finally:
        c.close()
    goaway = next((e.error_code for e in got if isinstance(e, h2.events.ConnectionTerminated)),
                  None)
    return {"refused": sum(1 for e in got if isinstance(e, h2.events.StreamReset)
                           and e.error_code == h2.errors.ErrorCodes.REFUSED_STREAM),
            "answered": sum(1 for e in got if isinstance(e, h2.events.ResponseReceived)),
            "goaway": goaway}


def no_window(port: int, ca: str, key: str, method: str, *,
              limit_s: float = 20.0) -> list:
    """Announce an initial flow-control window of 0, send one request and read (without
    ever granting window) until its stream ends or is reset: the events."""
    c = RawH2(port, ca)
    try:
        c.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        c.request(1, rpc_body(method), key=key)

        def done(events) -> bool:
            return any(isinstance(e, h2.events.StreamEnded | h2.events.StreamReset
                                  | h2.events.ConnectionTerminated) for e in events)
        return c.events(done, limit_s=limit_s)
    finally:
        c.close()


def silent(port: int, ca: str, *, alpn: str = "h2", send: bytes = b"",
           limit_s: float = 20.0) -> bool:
    """Open a TLS connection, send ``send`` (nothing, or half a request) and wait up to
    ``limit_s`` for the server to close it: whether it did."""
    ctx = context(ca)
    ctx.set_alpn_protocols([alpn])
    raw = socket.create_connection(("127.0.0.1", port), timeout=limit_s)
    try:
        sock = ctx.wrap_socket(raw, server_hostname="rpc.localhost")
    except (OSError, ssl.SSLError):
        return True  # closed during the handshake
    try:
        if send:
            sock.sendall(send)
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            try:
                if not sock.recv(65536):
                    return True
            except TimeoutError:
                return False
            except (OSError, ssl.SSLError):
                return True
        return False
    finally:
        sock.close()


def reset_in_service(port: int, ca: str, key: str, method: str, *,
                     first: int = STREAMS_PER_CONNECTION, then: int = 10,
                     wait_s: float = 0.5, limit_s: float = 10.0) -> dict:
    """Send ``first`` requests, wait ``wait_s`` (they are in their service time), cancel
    them all (``RST_STREAM CANCEL``) and send ``then`` more at once; read until each of
    those has ended or been reset: how many of them were ``refused`` and ``answered``."""
    c = RawH2(port, ca)
    try:
        ids = [1 + 2 * i for i in range(first)]
        for sid in ids:
            c.request(sid, rpc_body(method, sid), key=key, flush=False)
        c.flush()
        time.sleep(wait_s)
        for sid in ids:
            c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        more = [1 + 2 * (first + i) for i in range(then)]
        for sid in more:
            c.request(sid, rpc_body(method, sid), key=key, flush=False)
        c.flush()

        def done(events) -> bool:
            ended = {e.stream_id for e in events if e.__class__ in (
                h2.events.StreamEnded, h2.events.StreamReset) and e.stream_id in more}
            return len(ended) == len(more)
        got = c.events(done, limit_s=limit_s)
    finally:
        c.close()
    return {"refused": sum(1 for e in got if isinstance(e, h2.events.StreamReset)
                           and e.stream_id in more
                           and e.error_code == h2.errors.ErrorCodes.REFUSED_STREAM),
            "answered": sum(1 for e in got if isinstance(e, h2.events.ResponseReceived)
                            and e.stream_id in more)}
