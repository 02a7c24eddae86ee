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

from ..policy.connections import AccountConnections

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
            conns, most = self.conns, self.max_streams
            # A copy only if a close may remove a connection while we walk the list.
            for conn in conns if len(conns) < 2 else conns[:]:
                if conn.deadline <= now and self.account.close_if_idle(conn, now):
                    continue
                if conn.active >= most:
                    conn.refresh(now)
                if conn.active < most:
                    # _stream_on for a reusable connection, inlined (every attempt's path)
                    conn.active += 1
                    ready = conn.ready_at
                    start = ready if ready > now else now  # max(now, ready), no call
                    deadline = start + self.idle_timeout_s
                    if deadline > conn.deadline:
                        conn.deadline = deadline
                    return start, conn
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
            conn = next((c for c in self.conns
                         if c.active < self.max_streams and not c.closed), None)
            if conn is None:
                break
            request, since = self.waiting.popleft()
            self.on_ready(request, self._stream_on(conn, now), conn, since)
        if self.waiting:
            nxt = min((c.releases[0] for c in self.conns if c.releases), default=None)
            if nxt is not None:
                self.wake_at(nxt)
