"""The one walk of recorded attempts through the policy objects, in time order.

Calibration (:func:`sim.calibration.replay.replay`) and the emulator's agreement check
(:func:`sim.calibration.agreement.compare`) both replay a trace's attempts at their
recorded times through the policy objects (a limiter of
:func:`sim.policy.limiters.make_limiter`, a :class:`~sim.policy.slots.SlotPool`; the
agreement check through the :class:`~sim.policy.admission.Admission` that holds them).
:class:`Timeline` is what they share: one heap of timed actions -- a reservation settled
to its actual CU, a websocket slot given back, or anything the caller schedules (a
connection closed, a recorded close or publish) -- applied, before each attempt, up to
the attempt's time. At equal times settles and slot releases come first
(:data:`FIRST`), then recorded events (:data:`RECORDED`), then the attempt; among equals,
in the order they were scheduled.

What each caller still decides itself, per attempt: calibration replays only the rows
the CU window decided (the others were refused before it and are skipped), at prices
that change from one replay to the next (the fit replays many times), so it asks the
limiter and the slot pool directly and holds a handshake's slot for its recorded
latency; the agreement check asks the whole :class:`~sim.policy.admission.Admission`
(key, HTTP/2 and SNI, the API in the tier, connection limits) and frees slots at the
sidecar's recorded closes, clean or stale.

Along a timeline (a 100 CU window, a sizing request reserving 80 CU and settling to 10)::

    t=0.0  reserve 80 -> ok; settle_at(0.5, ...)   window used 80
    t=0.4  reserve 30 -> throttled                  (the settle is not due)
    t=0.5  advance: the settle is applied          window used 10
    t=0.5  reserve 30 -> ok                         window used 40
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..policy.limiter import Reservation
from ..policy.slots import SlotPool

FIRST, RECORDED = 0, 1
"""Priorities at equal times: settles, slot releases and connection closes, then recorded
events; an attempt at that time comes after both."""


class Timeline:
    """One heap of timed actions over ``limiter`` (and ``slots``, for websocket slots)."""

    def __init__(self, limiter, slots: SlotPool | None = None) -> None:
        self.limiter = limiter
        self.slots = slots
        self._heap: list[tuple[float, int, int, Callable, tuple]] = []
        self._seq = 0

    def at(self, t: float, priority: int, action: Callable, *args) -> None:
        """Call ``action(t, *args)`` once the walk reaches ``t``."""
        self._seq += 1
        heapq.heappush(self._heap, (t, priority, self._seq, action, args))

    def settle_at(self, t: float, booked: Reservation, reserved: float,
                  actual: float) -> None:
        """Settle the admitted reservation ``booked`` from ``reserved`` to ``actual`` CU at
        ``t`` (nothing to do when they are equal or nothing was reserved)."""
        if reserved > 0.0 and actual != reserved:
            self.at(t, FIRST, self.limiter.settle, booked, reserved, actual)

    def release_slot_at(self, t: float) -> None:
        """Give a held websocket slot back (a clean close) at ``t``; never when ``t`` is
        NaN or infinite (the connection's end was not recorded: it holds its slot)."""
        if math.isfinite(t):
            self.at(t, FIRST, self.slots.release_clean)

    def advance(self, now: float) -> None:
        """Apply every action due at or before ``now``."""
        heap = self._heap
        while heap and heap[0][0] <= now:
            t, _, _, action, args = heapq.heappop(heap)
            action(t, *args)

    def walk(self, order: Iterable[int], times: Sequence[float]) -> Iterator[tuple[int, float]]:
        """The attempts ``order`` (indices, in time order) with their times ``times[i]``,
        each after the actions due by then."""
        for i in order:
            now = times[i]
            self.advance(now)
            yield i, now
