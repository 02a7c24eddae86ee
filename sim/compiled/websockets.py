"""Websockets on the compiled engine: the SimPy model's session processes, run by Python
between the compiled loop's events, over the loop's own limiter state.

The websocket side of a run is few events (handshakes, drops, reconnects) next to the
HTTP traffic, and its rules (slots, stale expiries, reconnects, lost-event counts) are the
model's :class:`~sim.model.websockets.sessions.Websockets`: it runs here unchanged, on a
SimPy environment of its own (:class:`WebsocketSide`), and the loop hands over at its
events. The exception is a billed stream's publish chain, an event per published event
with a spend per live connection: the loop runs it (:mod:`sim.compiled.publish`, kept
in step by :class:`~sim.compiled.sessions.LoopWebsockets`).

Order: SimPy runs events by ``(time, priority, id)``, the id a single counter in schedule
order. The websocket environment takes its ids from the loop's ``seq`` counter
(:class:`SharedSeq`), so both sides number their events from one count, in the order
the SimPy model would; the loop compares its next event's ``(time, seq)`` with the
websocket side's ``(time, priority, id)`` and returns :data:`~sim.compiled.loop.RC_WS`
when the websocket side's comes first; Python runs the websocket events that precede
the loop's next one, then calls the loop again.

Limiter: handshakes and billed deliveries spend from the same window and daily allowance
as the HTTP attempts -- the loop's state arrays. :class:`ArrayLimiter` is the verbs the
websocket side calls (``spend``, ``retry_after``) over those arrays, through the same
policy functions the loop runs (:mod:`sim.compiled.policies`), compiled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from heapq import heappop

import numpy as np
import simpy

from ..policy.admission import Admission
from . import loop as lp
from . import policies as po
from .jit import njit
from .sessions import LoopWebsockets

_INF = math.inf


#: :func:`lim_spend`'s answer when the arrays need room first (nothing was done).
NEED_ROOM = -1


@njit
def lim_spend(LF, LI, WF, WI, DF, DI, GF, a, now, cost):
    """CULimiter.spend: reserve a cost known in advance and settle it at once (a
    websocket connect or delivery); the limiter's status, or :data:`NEED_ROOM` when the
    arrays may lack the row of a window or day it would open (as the loop checks)."""
    if LI[a, po.LI_NWIN] + 2 > WF.shape[1] or now >= GF[lp.GF_DAY_LIMIT]:
        return NEED_ROOM
    status, wid, _, _ = po.lim_reserve(LF, LI, WF, WI, DF, DI, a, now, cost, cost)
    if status == po.OK and cost > 0.0:
        WF[a, wid, po.W_SETTLED] += cost
    return status


@njit
def lim_retry_after(LF, LI, a, now):
    """CULimiter.retry_after over the arrays (whole seconds, at least 1)."""
    return po.lim_retry_after(LF, LI, a, now)


class ArrayLimiter:
    """Account ``account``'s limiter in the compiled engine's state ``state`` (the dict
    of arrays the loop runs on, read at each call: the engine may have grown them),
    with the verbs the websocket side uses. ``make_room(now)`` is called when a spend
    finds no row for the window or day it may open; it is tried again after."""

    def __init__(self, state: dict[str, np.ndarray], account: int,
                 make_room: Callable[[float], None]) -> None:
        self._s, self._a = state, account
        self._make_room = make_room

    def spend(self, now: float, cost: float) -> int:
        """Reserve ``cost`` and settle it at once (``CULimiter.spend``): the status."""
        s = self._s
        status = lim_spend(s["LF"], s["LI"], s["WF"], s["WI"], s["DF"], s["DI"], s["GF"],
                           self._a, now, cost)
        if status == NEED_ROOM:
            self._make_room(now)
            status = lim_spend(s["LF"], s["LI"], s["WF"], s["WI"], s["DF"], s["DI"], s["GF"],
                               self._a, now, cost)
            assert status != NEED_ROOM
        return status

    def retry_after(self, now: float) -> int:
        """Whole seconds (at least 1) to the next window's start."""
        s = self._s
        return int(lim_retry_after(s["LF"], s["LI"], self._a, float(now)))


class SharedSeq:
    """An event-id counter that is the loop's ``seq`` (``G[G_SEQ]``): SimPy calls
    ``next()`` on it for each event it schedules."""

    __slots__ = ("_G",)

    def __init__(self, G: np.ndarray) -> None:
        self._G = G

    def __iter__(self):
        return self

    def __next__(self) -> int:
        G = self._G
        seq = int(G[po.G_SEQ])
        G[po.G_SEQ] = seq + 1
        return seq


class WebsocketSide:
    """The websocket side of a compiled run: the model's
    :class:`~sim.model.websockets.sessions.Websockets` on its own SimPy environment, with
    event ids from the loop's counter and each account's limiter an
    :class:`ArrayLimiter` over the loop's state.

    ``build(env, admissions)`` makes the :class:`Websockets` (the tier run's
    ``_websockets``); ``admissions`` are the accounts' (their slot pools and prices),
    ``limiters`` the :class:`ArrayLimiter` of each. A
    :class:`~sim.compiled.sessions.LoopWebsockets` is bound to the loop: ``push(t, kind,
    obj)`` schedules a loop event, ``replaced()`` says arrays of ``state`` were replaced.
    :meth:`start` creates the session processes (call it where the SimPy model does,
    after the loop's first events); :meth:`run_until_head` runs the events before the
    loop's next one; :meth:`finish_publish` and :meth:`refill` answer the loop's
    ``RC_PUBLISH`` and ``RC_TIMES``; :meth:`result` is the model's result.
    """

    def __init__(self, state: dict[str, np.ndarray], admissions: list[Admission],
                 limiters: list[ArrayLimiter], build, push=None, replaced=None) -> None:
        self._s = state
        self.env = simpy.Environment()
        self.env._eid = SharedSeq(state["G"])
        own = [Admission(a.tier, a.pricing, lim, a.slots, a.connections,
                         method_api=a.method_api, connect_cu=a.connect_cu,
                         publish_cu=a.publish_cu)
               for a, lim in zip(admissions, limiters, strict=True)]
        self.ws = build(self.env, own)
        self._loop_ws = isinstance(self.ws, LoopWebsockets)
        if self._loop_ws:
            self.ws.bind(state, push, replaced)

    def start(self) -> None:
        """Create the session processes and post the first event to the loop."""
        self.ws.start()
        self._post_head()

    def finish_publish(self) -> None:
        """The rest of a publish the loop stopped (a delivery could not spend)."""
        self.ws.finish_publish()
        self._post_head()

    def refill(self) -> None:
        """The next times of the stream the loop asks for."""
        self.ws.refill(int(self._s["GS"][lp.GS_PUB_STREAM]))

    def result(self):
        """The model's websocket result, once the run is over."""
        if self._loop_ws:
            self.ws.sync()
        return self.ws.result()

    def run_until_head(self) -> None:
        """Run every websocket event that comes before the loop's next event (left in
        ``GF[GF_HEAD_T]``, ``GS[GS_HEAD_KEY]``), as SimPy's step would; post the next."""
        if self._loop_ws:
            self.ws.sync()
        env, queue = self.env, self.env._queue
        GF, GS = self._s["GF"], self._s["GS"]
        normal = lp.NORMAL_KEY
        while queue:
            # (re-read: an event may schedule a loop event before the loop's head)
            head_t, head_key = GF[lp.GF_HEAD_T], GS[lp.GS_HEAD_KEY]
            t, prio, eid, _ = queue[0]
            if t > head_t or (t == head_t and (normal if prio else 0) + eid > head_key):
                break
            env._now, _, _, event = heappop(queue)
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                raise event._value  # a session process failed: as SimPy's step
        self._post_head()

    def _post_head(self) -> None:
        queue = self.env._queue
        if queue:
            t, prio, eid, _ = queue[0]
            self._s["GF"][lp.GF_WS_T] = t
            self._s["GS"][lp.GS_WS_KEY] = (lp.NORMAL_KEY if prio else 0) + eid
        else:
            self._s["GF"][lp.GF_WS_T] = _INF

    @property
    def now(self) -> float:
        """The time of the last websocket event run."""
        return self.env.now
