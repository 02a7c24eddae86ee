"""One HTTP exchange of the emulator, its reply, and the access log line it leaves.

An access-log line per request (websocket handshakes included)::

    2026-11-25T06:10:00.123Z rpc.localhost POST / svc_call 200 ok cu=20 \
        decide_ms=0.41 t=12.345678 key=key-3f2a9c0d1e2b4a5c

(one line; broken here to fit)
time (UTC, ms), hostname (``Host``, else SNI), method and path, what was asked (the
JSON-RPC method, ``POST /v1/size``, a stream), HTTP status, outcome (``ok``, ``-32005``,
``434``, ...), CU reserved for an admitted request (``cu=0`` otherwise), wall
milliseconds from the request reaching the application until it was decided, the
service time of the decision, and the key's pseudonym (:func:`sim.core.pseudonyms.pseudonym`;
``key=-`` without a key). The key itself is never written, nor any other part of a
request as sent that could hold one: a path the emulator does not serve is written with
each segment that is not a known word replaced by its pseudonym
(:func:`sim.core.pseudonyms.masked_path`: ``/v2/<key>`` becomes ``/v2/key-...``), and
so is what was asked when it is not a method or stream the emulator knows, and a
``Host`` that is not one of the emulator's hostnames or an address.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import queue
import re
import sys
import threading
import time
from functools import lru_cache
from typing import TextIO

from ..core.errors import CapsimError
from ..core.pseudonyms import masked_path, pseudonym
from ..core.vocabulary import (
    MONITORING,
    MONITORING_PATH,
    SIZE_METHOD,
    STREAM_NAMES,
    STREAMS_API_STREAMS,
)
from .certs import HOSTNAMES

SERVED_PATHS: frozenset[str] = frozenset({
    "/", "/v1/size", "/healthz", "/admin/window", "/admin/reset", "/admin/faults",
    "/admin/requests", "/admin/requests/verify", "/admin/rules", "/admin/tier",
    MONITORING_PATH, *(f"/{s}" for s in STREAMS_API_STREAMS)})
"""The paths the emulator serves: logged as sent."""

PATH_WORDS: frozenset[str] = frozenset(
    {seg for p in SERVED_PATHS for seg in p.split("/") if seg}
    | {"api", "lb", "status", "health", "ws", "rpc", "search", "streams"})
"""Segments of other paths that are written as sent (every other one as its pseudonym)."""


@lru_cache(maxsize=256)
def _pseudonym(key: str) -> str:
    return pseudonym(key)


@lru_cache(maxsize=256)
def shown_path(path: str) -> str:
    """``path`` as the access log writes it (module docstring)."""
    return path if path in SERVED_PATHS else masked_path(path, PATH_WORDS)


_ADDRESS_HOST = re.compile(r"^(localhost|[0-9.]+|\[?[0-9a-fA-F:]+\]?)$")


def shown_host(host: str, served: frozenset[str]) -> str:
    """The ``Host`` (else SNI) as the access log writes it: a served hostname, an
    address or ``localhost`` as sent; any other as its pseudonym (clients put keys in
    subdomains too)."""
    if host == "-" or host.lower() in served or _ADDRESS_HOST.match(host):
        return host
    return pseudonym(host)


def shown_what(what: str, known: frozenset[str] = frozenset()) -> str:
    """What was asked as the access log writes it: a known method, stream or served path
    as sent, anything else (a method the emulator does not have) as its pseudonym."""
    if what in known or what in STREAM_NAMES or what in ("-", SIZE_METHOD):
        return what
    if what.startswith("/"):
        return shown_path(what)
    return pseudonym(what)


class Exchange:
    """One request as it is handled: what was asked, how it was decided and answered."""

    def __init__(self, scope, send) -> None:
        self.scope, self._send = scope, send
        self.arrived = time.perf_counter()
        self.decided_at: float | None = None
        self.status: int | None = None
        self.outcome: str | None = None
        self.what: str = "-"
        self.now = math.nan
        self.reserved = 0.0
        self.account = None  # the Admission that decided it (settles it after a reset)
        self.settled: float | None = None
        self.disconnected = False
        self.api: str | None = None  # rpc, search, streams (None: no API's hostname)
        self.retry_after_s: float | None = None
        self.fault: str | None = None  # the id of the rule applied (:mod:`.admin`)
        self.delay_s = 0.0  # wall seconds to wait before replying (a latency rule)
        self.replied_at: float | None = None

    def header(self, name: bytes) -> str | None:
        for k, v in self.scope.get("headers", ()):
            if k.lower() == name:
                return v.decode("latin-1")
        return None

    def decided(self, outcome: str, reserved: float) -> None:
        self.decided_at = time.perf_counter()
        self.outcome = outcome
        self.reserved = reserved if outcome == "ok" else 0.0

    async def reply(self, status: int, body, headers=(), close: bool = False) -> None:
        """Send a JSON reply (no body for ``None``); ``close`` asks an HTTP/1.1 client to
        close the connection after it (HTTP/2 has no such header)."""
        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
        if self.decided_at is None:
            self.decided_at = time.perf_counter()
        self.status = status
        hdrs = []
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            hdrs = [(b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode())]
        if not math.isnan(self.now):
            hdrs.append((b"x-capsim-t", f"{self.now:.6f}".encode()))
        if close and self.scope.get("http_version") != "2":
            hdrs.append((b"connection", b"close"))
        hdrs.extend((k.encode(), v.encode()) for k, v in headers)
        for k, v in headers:
            if k == "retry-after":
                self.retry_after_s = float(v)
        self.replied_at = time.perf_counter()
        # The client may be gone by now (its reply goes nowhere): not the emulator's error.
        with contextlib.suppress(Exception):
            await self._send({"type": "http.response.start", "status": status,
                              "headers": hdrs})
            await self._send({"type": "http.response.body", "body": data})


class AccessLog:
    """Writes one line per exchange to ``out`` (``None``: off).

    Lines are written by a thread of their own from a bounded queue: the event loop
    never waits on the log (a pipe nobody reads, a slow disk). Lines that do not fit in
    the queue (:data:`QUEUE_LINES`) are dropped and counted (``dropped``)."""

    QUEUE_LINES = 10_000

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out
        self.format = "text"
        """``text`` (one line per request, module docstring) or ``jsonl`` (for
        ``capsim trace import``, :func:`jsonl_line`)."""
        self.t0_unix: float | None = None  # the service clock's start (jsonl timestamps)
        self.methods: frozenset[str] = frozenset()  # the scenario's: written as asked
        self.hosts: frozenset[str] = frozenset(HOSTNAMES.values())  # served: as sent
        self.lines = 0
        self.dropped = 0
        self._queue: queue.Queue[str | None] = queue.Queue(self.QUEUE_LINES)
        self._thread: threading.Thread | None = None
        if out is not None:
            self._thread = threading.Thread(target=self._drain, name="capsim-access-log",
                                            daemon=True)
            self._thread.start()

    @classmethod
    def open(cls, target: str | None, fmt: str = "text") -> AccessLog:
        """``None``/``"off"``: no log; ``"-"``: standard error; else a file (appended);
        ``fmt``: ``text`` or ``jsonl``."""
        if fmt not in ("text", "jsonl"):
            raise CapsimError(f"unknown access log format {fmt!r}; expected text or jsonl",
                              field="--access-log-format")
        if target in (None, "off"):
            log = cls(None)
        elif target == "-":
            log = cls(sys.stderr)
        else:
            try:
                log = cls(open(target, "a", encoding="utf-8", buffering=1))  # noqa: SIM115
            except OSError as err:
                raise CapsimError(f"cannot open the access log: {err.strerror}", file=target,
                                  field="--access-log") from None
        log.format = fmt
        return log

    def _drain(self) -> None:
        while (line := self._queue.get()) is not None:
            with contextlib.suppress(OSError, ValueError):
                self.out.write(line)
                if self._queue.empty():
                    self.out.flush()

    def close(self) -> None:
        """Write what is queued (waiting at most a second), then close a file."""
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=1.0)
        self._thread.join(1.0)
        if not self._thread.is_alive() and self.out is not sys.stderr:
            with contextlib.suppress(OSError):
                self.out.close()

    def record(self, ex: Exchange, sni: str | None = None) -> dict:
        """What the log (and the journal, :mod:`.admin`) keeps of ``ex``: never the key,
        nor any part of the request that could hold one (module docstring)."""
        t = time.time()
        raw = ex.header(b"host") or sni or "-"
        # an IPv6 literal keeps its brackets; any other host loses its port
        host = raw[:raw.find("]") + 1] if raw.startswith("[") and "]" in raw \
            else raw.split(":", 1)[0]
        key = ex.header(b"x-api-key")
        end = ex.replied_at or time.perf_counter()
        return {
            "time_unix": t, "host": shown_host(host, self.hosts),
            "api": ex.api, "http_method": ex.scope.get("method", "GET"),
            "path": shown_path(ex.scope.get("path", "")),
            "method": shown_what(ex.what, self.methods),
            "status": ex.status if ex.status is not None else (
                "gone" if ex.disconnected else "-"),
            "outcome": ex.outcome or (str(ex.status) if ex.status is not None else "-"),
            "cu": ex.settled if ex.settled is not None else ex.reserved,
            "decide_ms": round(((ex.decided_at or end) - ex.arrived) * 1e3, 3),
            "latency_ms": round((end - ex.arrived) * 1e3, 3),
            "t_s": ex.now, "key": _pseudonym(key) if key else "-",
            "retry_after_s": ex.retry_after_s, "fault": ex.fault,
        }

    def line(self, ex: Exchange, sni: str | None = None) -> str:
        return text_line(self.record(ex, sni))

    def write(self, ex: Exchange, sni: str | None = None) -> dict:
        """Log ``ex`` (in the background) and return its record."""
        rec = self.record(ex, sni)
        self.lines += 1
        if self._thread is None:
            return rec
        out = jsonl_line(rec, self.t0_unix) if self.format == "jsonl" else text_line(rec)
        if out is None:
            return rec
        try:
            self._queue.put_nowait(out + "\n")
        except queue.Full:
            self.dropped += 1
        return rec


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


def text_line(rec: dict) -> str:
    """A record as the text access log writes it (module docstring)."""
    t_s = rec["t_s"]
    line = (f"{_stamp(rec['time_unix'])} {rec['host']} {rec['http_method']} {rec['path']} "
            f"{rec['method']} {rec['status']} {rec['outcome']} cu={rec['cu']:g} "
            f"decide_ms={rec['decide_ms']:.2f} t={t_s:.6f} key={rec['key']}")
    return line + (f" fault={rec['fault']}" if rec["fault"] else "")


def jsonl_line(rec: dict, t0_unix: float | None) -> str | None:
    """A record as a JSON line ``capsim trace import`` reads (canonical column names):
    requests to the three APIs only (not ``/healthz`` or ``/admin/*``); ``timestamp`` is
    the service time of the decision laid on the server's start, so that a run at
    ``--time-scale`` X replays at the service's own pace; ``status`` is the JSON-RPC
    error code when a ``200`` carried one; the key only as its pseudonym."""
    if rec["api"] is None or rec["path"] == "/healthz" or rec["path"].startswith("/admin/"):
        return None
    t_s = rec["t_s"]
    when = t0_unix + t_s if t0_unix is not None and math.isfinite(t_s) else rec["time_unix"]
    outcome, status = rec["outcome"], rec["status"]
    if outcome.startswith("-") and outcome[1:].isdigit():
        status = int(outcome)
    if not isinstance(status, int):
        return None  # the client went away before a reply: nothing was observed
    method = MONITORING_PATH if rec["method"] == MONITORING else rec["method"]
    row = {"timestamp": _stamp(when), "api": rec["api"], "method": method,
           "key": rec["key"] if rec["key"] != "-" else "(none)", "status": status,
           "cu": rec["cu"], "latency_ms": rec["latency_ms"], "t_s": round(t_s, 6)}
    if rec["retry_after_s"] is not None:
        row["retry_after_s"] = rec["retry_after_s"]
    return json.dumps(row, separators=(",", ":"))
