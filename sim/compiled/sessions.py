""":class:`LoopWebsockets`: the model's websocket sessions with billed publishing in the
compiled loop (:mod:`sim.compiled.publish`).

Everything but the publish chain is the model's code
(:class:`~sim.model.websockets.sessions.Websockets`, run by
:class:`~sim.compiled.websockets.WebsocketSide`). A billed stream's chain of publish
events is the loop's ``EV_PUBLISH`` instead of a SimPy event: this class schedules its
first event where the model would (:meth:`_schedule`, with the next id of the shared
counter), keeps the loop's copy of each stream's live connections in the model's order
(:meth:`_open`, :meth:`_close`) and of its next times (a second copy of the stream's
sequence read ahead), and finishes a publish in which a delivery could not spend
(:meth:`finish_publish`, the model's ``_publish`` from that connection on). Before any of
the model's code runs, :meth:`sync` brings the model's counts up to the loop's: the
times the loop consumed, whether each chain is still scheduled, the CU spent.
"""

from __future__ import annotations

import math

import numpy as np

from ..model.websockets.sessions import Websockets
from . import loop as lp
from . import publish as pb

_INF = math.inf
#: Times handed to the loop at a time, per stream.
TIMES_BLOCK = 1024


class LoopWebsockets(Websockets):
    """:class:`~sim.model.websockets.sessions.Websockets` whose billed publishing runs in
    the compiled loop. Call :meth:`bind` before :meth:`start`."""

    def bind(self, state: dict, push, replaced) -> None:
        """Use the loop's state ``state``; ``push(t, kind, obj)`` schedules a loop event
        (next id), ``replaced()`` says that arrays of ``state`` were replaced."""
        self._state, self._push, self._replaced = state, push, replaced
        names = list(self._streams)
        self._index = {name: b for b, name in enumerate(names)}
        n = len(names)
        state["PB"] = np.zeros((n, pb.PB_NI), dtype=np.int64)
        state["PC"] = np.array([self._streams[name].cost for name in names], dtype=float)
        state["PT"] = np.zeros((n, TIMES_BLOCK))
        state["PL"] = np.zeros((n, 8), dtype=np.int64)
        self._copies = [self.publish_times(name) for name in names]
        replaced()

    # -- the loop's copies -----------------------------------------------------------

    def sync(self) -> None:
        """The model's counts as the loop left them (call before the model's code)."""
        PB = self._state["PB"]
        for b, st in enumerate(self._streams.values()):
            k = int(PB[b, pb.PB_COUNT])
            if k:
                st.times.skip(k)
                PB[b, pb.PB_COUNT] = 0
            st.active = bool(PB[b, pb.PB_ACTIVE])
        self.records.cu_publish = float(self._state["GF"][lp.GF_CU_PUBLISH])

    def refill(self, b: int) -> None:
        """The next block of stream ``b``'s times into PT (the loop consumed the last)."""
        PB, PT = self._state["PB"], self._state["PT"]
        times = self._copies[b].take(TIMES_BLOCK)
        k = len(times)
        PT[b, :k] = times
        if k < TIMES_BLOCK:
            PB[b, pb.PB_DONE] = 1
        PB[b, pb.PB_LEN], PB[b, pb.PB_NEXT] = k, 0

    def _position(self, st, b: int) -> None:
        """Point the loop at the time after ``st``'s next one (the one just scheduled)."""
        PB = self._state["PB"]
        n = int(PB[b, pb.PB_LEN])
        copy = self._copies[b]
        k = st.times.count + 1 - (copy.count - n)  # PT[b, 0] is time copy.count - n
        if k > n:  # past what PT holds: skip the copy to it
            copy.skip(k - n)
            PB[b, pb.PB_NEXT] = n
            if not PB[b, pb.PB_DONE]:
                self.refill(b)
            return
        PB[b, pb.PB_NEXT] = k

    def _live(self, st) -> None:
        """The loop's copy of ``st``'s live connections (their accounts, in order)."""
        s, b = self._state, self._index[st.name]
        n = len(st.live)
        if n > s["PL"].shape[1]:
            PL = np.zeros((s["PL"].shape[0], 2 * n), dtype=np.int64)
            PL[:, : s["PL"].shape[1]] = s["PL"]
            s["PL"] = PL
            self._replaced()
        acct = self._acct
        s["PL"][b, :n] = [acct[c.client] for c in st.live]
        s["PB"][b, pb.PB_NLIVE] = n

    # -- the model's hooks -----------------------------------------------------------

    def _schedule(self, st, now: float) -> None:
        nxt = st.times.peek() if st.live else _INF
        st.active = nxt < _INF
        b = self._index[st.name]
        self._state["PB"][b, pb.PB_ACTIVE] = st.active
        if st.active:
            self._position(st, b)
            self._push(self.env._now + max(nxt - now, 0.0), lp.EV_PUBLISH, b)

    def _open(self, conn, now: float) -> None:
        super()._open(conn, now)
        self._live(self._streams[conn.stream])

    def _close(self, conn, now: float, kind: int) -> None:
        super()._close(conn, now, kind)
        self._live(self._streams[conn.stream])

    def finish_publish(self) -> None:
        """The rest of the publish the loop stopped (``RC_PUBLISH``): the model's
        ``_publish`` from the connection whose delivery could not spend."""
        s = self._state
        b, i = int(s["GS"][lp.GS_PUB_STREAM]), int(s["GS"][lp.GS_PUB_AT])
        spent, nxt = float(s["GF"][lp.GF_PUB_SPENT]), float(s["GF"][lp.GF_PUB_NEXT])
        now = float(s["GF"][lp.GF_NOW])
        self.sync()
        self.env._now = now  # this publish's time (an interrupt is scheduled at it)
        st = list(self._streams.values())[b]
        live, cost = st.live, st.cost
        rest = list(live)[i:]  # from the connection whose delivery could not spend
        self._exhausted(rest[0], now)
        spent += self._deliver(rest[1:], now, cost)
        s["GF"][lp.GF_CU_PUBLISH] += spent
        if live and nxt < _INF:
            self._push(now + (nxt - now), lp.EV_PUBLISH, b)
        else:
            st.active = False
            s["PB"][b, pb.PB_ACTIVE] = 0
