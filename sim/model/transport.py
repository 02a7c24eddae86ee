"""HTTP/2 connections: client pools per regional hostname and the account's limits.

Spec 8.4: at most ~32 active streams per HTTP/2 connection (one in-flight request is
one stream); at most 128 active connections per account across regions; at most 32 new
connections per second per hostname. An open beyond either account limit is refused
with ``430`` and the request that needed it fails with ``430``.

Lazy, not ticking: a connection keeps a heap of the times its streams will be released
(known when the reply is sent), and pops the past ones when asked; an idle connection's
close time is ``last request + idle_timeout_s`` and the account learns of it from a heap
when it next checks its limit. Only a client with queued requests sleeps, once, until
the earliest release.

Idleness is counted from the last request sent on a connection, not from its last
reply: with idle timeouts of tens of seconds and replies in milliseconds the two differ
negligibly, and it lets the close time be known without an event per reply.
"""

from __future__ import annotations

import heapq
from collections import deque

REFUSED = -1.0
QUEUED = -2.0


class Connection:
    """One HTTP/2 connection of a client to a hostname."""

    __slots__ = ("pool", "ready_at", "active", "releases", "deadline", "closed", "reusable")

    def __init__(self, pool: ClientPool, ready_at: float, reusable: bool) -> None:
        self.pool = pool
        self.ready_at = ready_at
        self.active = 0
        self.releases: list[float] = []
        self.deadline = ready_at
        self.closed = False
        self.reusable = reusable

    def refresh(self, now: float) -> None:
        """Release the streams whose replies have reached the client by ``now``."""
        rel = self.releases
        while rel and rel[0] <= now:
            heapq.heappop(rel)
            self.active -= 1

    def release_at(self, t: float) -> None:
        """The stream of a request in flight is released when its reply arrives at ``t``."""
        heapq.heappush(self.releases, t)
        if not self.reusable:
            self.deadline = t  # closed right after its single request
            self.pool.account.schedule_close(self)
        if self.pool.waiting:
            self.pool.wake_at(t)


class AccountConnections:
    """The account's connection limits, across all clients and regions."""

    def __init__(self, max_active: int = 128, max_opens_per_s: int = 32) -> None:
        self.max_active = max_active
        self.max_opens_per_s = max_opens_per_s
        self.active = 0
        self.peak_active = 0
        self.opened = 0
        self.refused = 0
        self._opens: dict[str, deque[float]] = {}
        self._closing: list[tuple[float, int, Connection]] = []
        self._seq = 0

    def schedule_close(self, conn: Connection) -> None:
        """Remember when ``conn`` closes unless used again (re-keyed lazily on pop)."""
        self._seq += 1
        heapq.heappush(self._closing, (conn.deadline, self._seq, conn))

    def close_if_idle(self, conn: Connection, now: float) -> bool:
        """Close ``conn`` if its idle deadline has passed with no stream open on it."""
        if conn.closed:
            return True
        if conn.deadline > now:
            return False
        conn.refresh(now)
        if conn.active > 0:  # a long request outlived the timeout: idle from its reply on
            conn.deadline = max(conn.releases) + conn.pool.idle_timeout_s
            self.schedule_close(conn)
            return False
        conn.closed = True
        self.active -= 1
        conn.pool.forget(conn)
        return True

    def _expire(self, now: float) -> None:
        closing = self._closing
        while closing and closing[0][0] <= now:
            deadline, _, conn = heapq.heappop(closing)
            if conn.closed:
                continue
            if conn.deadline > deadline:  # used since: its close moved later
                self.schedule_close(conn)
                continue
            self.close_if_idle(conn, now)

    def release(self, now: float) -> None:
        """An admitted connection closed at ``now`` (for a caller that sees its connections
        close, such as the live emulator; the model's own connections close lazily)."""
        self._expire(now)
        if self.active <= 0:
            raise RuntimeError("release without an active connection")
        self.active -= 1

    def try_open(self, now: float, hostname: str) -> bool:
        """Admit a new connection to ``hostname`` at ``now``, or refuse it (430)."""
        self._expire(now)
        opens = self._opens.get(hostname)
        if opens is None:
            opens = self._opens[hostname] = deque()
        while opens and opens[0] <= now - 1.0:
            opens.popleft()
        if self.active >= self.max_active or len(opens) >= self.max_opens_per_s:
            self.refused += 1
            return False
        opens.append(now)
        self.active += 1
        self.opened += 1
        if self.active > self.peak_active:
            self.peak_active = self.active
        return True


class ClientPool:
    """A client's connections to one regional hostname, and its queue of waiting requests.

    ``acquire(now)`` returns the time the request can be sent on a stream (``now``, or
    later while a new connection opens), ``QUEUED`` when it must wait for a stream (the
    pool calls ``on_ready(request, t)`` later), or ``REFUSED`` when the account refused
    the connection it needed (430).
    """

    def __init__(self, account: AccountConnections, hostname: str, env, *, rtt_s: float,
                 max_streams: int, max_connections: int, connect_rtts: float,
                 idle_timeout_s: float, reuse: bool, on_ready) -> None:
        self.account = account
        self.hostname = hostname
        self.env = env
        self.connect_s = connect_rtts * rtt_s
        self.max_streams = max_streams
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.reuse = reuse
        self.on_ready = on_ready
        self.conns: list[Connection] = []
        self.waiting: deque = deque()
        self._wake_at = float("inf")

    def forget(self, conn: Connection) -> None:
        """Drop a closed connection."""
        if conn in self.conns:
            self.conns.remove(conn)

    def _stream_on(self, conn: Connection, now: float) -> float:
        conn.active += 1
        if conn.reusable:
            deadline = max(now, conn.ready_at) + self.idle_timeout_s
            if deadline > conn.deadline:
                conn.deadline = deadline
        return max(now, conn.ready_at)

    def acquire(self, now: float) -> tuple[float, Connection | None]:
        """A stream for a request sent at ``now``: ``(send_time, connection)``."""
        if self.reuse and not self.waiting:
            for conn in list(self.conns):
                if conn.deadline <= now and self.account.close_if_idle(conn, now):
                    continue
                if conn.active >= self.max_streams:
                    conn.refresh(now)
                if conn.active < self.max_streams:
                    return self._stream_on(conn, now), conn
        if len(self.conns) < self.max_connections or not self.reuse:
            if not self.account.try_open(now, self.hostname):
                return REFUSED, None
            conn = Connection(self, now + self.connect_s, self.reuse)
            self.conns.append(conn)
            if self.reuse:
                conn.deadline = conn.ready_at + self.idle_timeout_s
                self.account.schedule_close(conn)
            return self._stream_on(conn, now), conn
        return QUEUED, None

    def enqueue(self, request, now: float) -> None:
        """Wait for a stream; woken at the earliest release."""
        self.waiting.append((request, now))
        for conn in self.conns:
            conn.refresh(now)
        self.wake_at(min((c.releases[0] for c in self.conns if c.releases), default=now))

    def wake_at(self, t: float) -> None:
        if t < self._wake_at:
            self._wake_at = t
            self.env.timeout(max(0.0, t - self.env.now)).callbacks.append(self._wake)

    def _wake(self, _event) -> None:
        now = self.env.now
        if now < self._wake_at:
            return  # superseded by an earlier wake
        self._wake_at = float("inf")
        for conn in self.conns:
            conn.refresh(now)
        while self.waiting:
            conn = next((c for c in self.conns if c.active < self.max_streams and not c.closed), None)
            if conn is None:
                break
            request, since = self.waiting.popleft()
            self.on_ready(request, self._stream_on(conn, now), conn, since)
        if self.waiting:
            nxt = min((c.releases[0] for c in self.conns if c.releases), default=None)
            if nxt is not None:
                self.wake_at(nxt)
