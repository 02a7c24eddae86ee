"""The account's HTTP/2 connection limits (spec 8.4): at most 128 active connections
across regions and at most 32 new connections per second per hostname; an open beyond
either is refused with ``430``.

Pure Python, no SimPy: it works on any connection object with ``deadline``, ``closed``,
``active``, ``releases``, ``refresh(now)`` and a ``pool`` with ``idle_timeout_s`` and
``forget(conn)`` (:class:`sim.model.transport.Connection`).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Any


class AccountConnections:
    """The account's connection limits, across all clients and regions."""

    def __init__(self, max_active: float = 128, max_opens_per_s: float = 32) -> None:
        self.max_active = max_active
        self.max_opens_per_s = max_opens_per_s
        self.active = 0
        self.peak_active = 0
        self.opened = 0
        self.refused = 0
        self._opens: dict[str, deque[float]] = {}
        self._closing: list[tuple[float, int, Any]] = []
        self._seq = 0

    @classmethod
    def unlimited(cls) -> AccountConnections:
        """The connections of no account (they never presented a valid key): nothing
        refuses them, and no account's figures count them."""
        return cls(math.inf, math.inf)

    def schedule_close(self, conn: Any) -> None:
        """Remember when ``conn`` closes unless used again (re-keyed lazily on pop)."""
        self._seq += 1
        heapq.heappush(self._closing, (conn.deadline, self._seq, conn))

    def close_if_idle(self, conn: Any, now: float) -> bool:
        """Close ``conn`` if its idle deadline has passed with no stream open on it."""
        if conn.closed:
            return True
        if conn.deadline > now:
            return False
        conn.refresh(now)
        if conn.active > 0:  # a long request outlived the timeout: idle from its reply on
            # A reply not sent yet has no release time: look again one timeout from now.
            # Idleness counts from the last request sent (sim/model/transport.py), so a
            # connection whose streams have all been released by then closes then.
            last = max(conn.releases) if conn.releases else now
            # Never at or before now: with idle_timeout_s = 0 a busy connection would be
            # due again at once, and the close loop would spin at this instant forever.
            conn.deadline = max(last + conn.pool.idle_timeout_s, math.nextafter(now, math.inf))
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
        """An admitted connection closed at ``now``: for a caller that sees its connections
        close, such as the live emulator (the model's connections close lazily, above)."""
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
