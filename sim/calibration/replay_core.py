"""Recorded attempts replayed through the policy, in time order: the one walk and the one
per-attempt decision.

Calibration (:func:`sim.calibration.replay.replay`) and the emulator's agreement check
(:func:`sim.calibration.agreement.compare`) both replay a trace's attempts at their
recorded times through an :class:`~sim.policy.admission.Admission` (a limiter of
:func:`sim.policy.limiters.make_limiter`, a :class:`~sim.policy.slots.SlotPool`, the
account's connection limits, asked in the service's order). They only build the inputs
-- :class:`Attempts`, one entry per row -- and score the outcomes :func:`decide` returns:

* calibration replays the rows the CU window decided (the others were refused before it
  and are left out), with every key valid and HTTP/2 with SNI, at prices that change from
  one replay to the next (the fit replays many times: a fresh ``Admission`` each time,
  its connect cost the trial one), and gives a handshake's slot back at its recorded
  time + latency (a HAR records a websocket's whole life there);
* the agreement check replays every row, with the key, HTTP/2 and SNI, connection and
  hostname the ``capsim drive`` sidecar recorded, closes each admitted connection at its
  last reply + the client's idle timeout, and frees slots at the sidecar's recorded
  closes (clean, or unclean: stale) and spends its recorded publishes.

:class:`Timeline` is the walk: one heap of timed actions -- a reservation settled to its
actual CU, a websocket slot given back, a connection closed, a recorded close or publish
-- applied, before each attempt, up to the attempt's time. At equal times settles, slot
releases and connection closes come first (:data:`FIRST`), then recorded events
(:data:`RECORDED`), then the attempt; among equals, in the order they were scheduled.

Along a timeline (a 100 CU window, a sizing request reserving 80 CU and settling to 10)::

    t=0.0  reserve 80 -> ok; settle_at(0.5, ...)   window used 80
    t=0.4  reserve 30 -> throttled                  (the settle is not due)
    t=0.5  advance: the settle is applied          window used 10
    t=0.5  reserve 30 -> ok                         window used 40
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..core.vocabulary import CONN_430, MONITORING, MONITORING_PATH, OK
from ..policy.admission import Admission
from ..policy.limiter import Reservation
from ..policy.slots import SlotPool
from ..traces.schema import WEBSOCKET_METHODS

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
        heap = self._heap
        for i in order:
            now = times[i]
            if heap and heap[0][0] <= now:
                self.advance(now)
            yield i, now


NOT_REPLAYED = -1
""":func:`decide`'s code for a row not replayed."""


class Close(NamedTuple):
    """A recorded websocket close: connection ``conn`` ended at ``t_s``, ``clean`` (a
    close frame: the slot is free at once) or not (the slot stays stale)."""

    t_s: float
    conn: int
    clean: bool


class Publish(NamedTuple):
    """A recorded delivery on ``stream`` at ``t_s`` (billed streams spend CU)."""

    t_s: float
    stream: str


@dataclass(frozen=True)
class Attempts:
    """What the replay knows of a trace's attempts: arrays of one entry per row.

    ``t_s`` is when each reached the service (seconds of the limiter's clock),
    ``reserve_cu`` / ``actual_cu`` what an HTTP attempt reserves and settles to at
    ``t_s`` + ``latency_s`` (NaN: at once); a handshake spends the ``Admission``'s
    connect cost. Optional columns (None: the default for every row): ``replayed``
    (default all), ``key_ok`` (valid), ``h2_sni`` (HTTP/2 with SNI), ``conn`` (the
    connection's id, -1 unknown: no connection limits are asked), ``conn_new`` (the
    attempt opened it), ``hostname``; ``conn_close_s`` maps an HTTP connection to when
    it closes, once admitted; ``slot_end_s`` is when an admitted handshake's slot goes
    back (NaN: at a recorded :class:`Close` of its connection, or never). ``events``
    are recorded closes and publishes, in their recorded order; an unclean close
    leaves its slot stale for ``stale_expiry_s``.
    """

    t_s: np.ndarray
    method: np.ndarray
    api: np.ndarray
    reserve_cu: np.ndarray
    actual_cu: np.ndarray
    latency_s: np.ndarray
    replayed: np.ndarray | None = None
    key_ok: np.ndarray | None = None
    h2_sni: np.ndarray | None = None
    conn: np.ndarray | None = None
    conn_new: np.ndarray | None = None
    hostname: np.ndarray | None = None
    conn_close_s: Mapping[int, float] | None = None
    slot_end_s: np.ndarray | None = None
    events: Sequence[Close | Publish] = ()
    stale_expiry_s: float = 0.0

    def walk_order(self) -> np.ndarray:
        """The rows replayed, in time order (equal times in row order)."""
        order = np.argsort(self.t_s, kind="stable")
        return order if self.replayed is None else order[self.replayed[order]]


_WEBSOCKET = frozenset(WEBSOCKET_METHODS)


def _column(values: np.ndarray | None, n: int, default) -> list:
    return [default] * n if values is None else values.tolist()


def _stream_of(method: str) -> str:
    return MONITORING if method == MONITORING_PATH else method


def decide(adm: Admission, att: Attempts) -> np.ndarray:
    """Replay ``att`` through ``adm`` in time order: each row's outcome (an index into
    :data:`~sim.core.vocabulary.OUTCOMES`; :data:`NOT_REPLAYED` for rows left out).

    An HTTP attempt on a known connection first passes the connection rule: a connection
    is the account's from its first request that passes the header checks (421, 401),
    as the emulator has it -- one that never presents a valid key counts against no
    limit -- and every such request on a connection the account refused is 430. The rest
    is :meth:`Admission.admit` (what :meth:`Admission.request` decides with) and
    :meth:`Admission.handshake`.
    """
    n = len(att.t_s)
    timeline = Timeline(adm.limiter, adm.slots)
    ws_live: dict[int, bool] = {}

    def closed(now: float, conn_id: int, clean: bool) -> None:
        # Only a connection the replay admitted holds a slot the replay can free.
        if ws_live.pop(conn_id, None) is not None:
            adm.websocket_closed(now, clean=clean, stale_expiry_s=att.stale_expiry_s)

    for ev in att.events:
        if isinstance(ev, Close):
            timeline.at(ev.t_s, RECORDED, closed, ev.conn, ev.clean)
        else:
            timeline.at(ev.t_s, RECORDED, adm.publish, ev.stream)
    method, api = att.method.tolist(), att.api.tolist()
    reserve, actual = att.reserve_cu.tolist(), att.actual_cu.tolist()
    latency = att.latency_s.tolist()
    key_ok = _column(att.key_ok, n, True)
    h2 = _column(att.h2_sni, n, True)
    conn = _column(att.conn, n, -1)
    conn_new = _column(att.conn_new, n, False)
    hostname = _column(att.hostname, n, "")
    slot_end = _column(att.slot_end_s, n, math.nan)
    conn_close = att.conn_close_s or {}
    handshake = [m in _WEBSOCKET for m in method]
    refused: set[int] = set()
    unasked: set[int] = set()
    out = [NOT_REPLAYED] * n
    admit, rule, hs = adm.admit, adm.http_rule, adm.handshake
    for i, now in timeline.walk(att.walk_order().tolist(), att.t_s.tolist()):
        if handshake[i]:
            d = hs(now, _stream_of(method[i]), key_ok=key_ok[i])
            if d.outcome == OK:
                ws_live[conn[i]] = True
                timeline.release_slot_at(slot_end[i])
            out[i] = d.outcome
            continue
        c = conn[i]
        if c >= 0:
            if conn_new[i]:
                unasked.add(c)
            headers_ok = key_ok[i] and (h2[i] or not adm.needs_h2(method[i]))
            if c in unasked and headers_ok:
                unasked.discard(c)
                if adm.connection_opened(now, hostname[i] or "default"):
                    timeline.at(conn_close[c], FIRST, adm.connection_closed)
                else:
                    refused.add(c)
            if c in refused and headers_ok:
                out[i] = CONN_430
                continue
        outcome, booked = admit(now, rule(method[i], api[i], key_ok[i], h2[i]), reserve[i],
                                actual[i])
        if outcome == OK:
            lat = latency[i]
            timeline.settle_at(now + (lat if lat == lat else 0.0), booked, reserve[i], actual[i])
        out[i] = outcome
    return np.array(out, dtype=np.int8)
