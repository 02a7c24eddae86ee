"""Billed websocket publishing in the compiled loop: the model's publish chain
(:meth:`sim.model.websockets.sessions.Websockets._publish`) as a loop event.

A billed stream with live connections publishes at each of its times, and each delivery
spends its cost from the connection's account -- most of a websocket run's events. The
loop runs them (``EV_PUBLISH``, one per stream) with the limiter functions it runs HTTP
with; Python (:mod:`sim.compiled.websockets`) keeps everything else: it starts a chain
when a connection opens on a stream without one, keeps the stream's live connections
here in the model's order, refills the times, and finishes a publish in which a delivery
could not spend (the connection is closed or the delivery dropped: the model's code).

State, per stream ``b`` (an index of the streams the clients use): ``PB[b, PB_*]`` ints,
``PT[b, k]`` its next publish times (a second copy of the model's sequence, read ahead
by Python), ``PL[b, k]`` the account of its ``k``-th live connection; the spent CU is
added up in ``GF[GF_CU_PUBLISH]`` as the model adds up ``cu_publish``.
"""

from __future__ import annotations

from .jit import njit_inline
from .policies import INF, OK, W_SETTLED, lim_reserve

# PB[b, PB_*]: the cost (in PF), publishes the loop consumed since Python last looked,
# the index in PT of the time after the scheduled publish, valid times in PT, whether
# PT's source has no more, whether a publish is scheduled, live connections
PB_COUNT, PB_NEXT, PB_LEN, PB_DONE, PB_ACTIVE, PB_NLIVE, PB_NI = range(7)
#: No delivery failed (:func:`publish`).
ALL_SPENT = -1


@njit_inline
def publish(PB, PC, PT, PL, LF, LI, WF, WI, DF, DI, b, now):
    """Stream ``b`` publishes at ``now``: consume its time, spend its cost ``PC[b]`` for
    each live connection in order (``CULimiter.spend``). Returns ``(failed, spent,
    next)``: the index of the first connection whose delivery could not spend (its spend
    done; :data:`ALL_SPENT`: none), the CU spent before it, and the time after this one
    (inf: none). The caller schedules the next publish when every delivery was spent."""
    PB[b, PB_COUNT] += 1
    k = PB[b, PB_NEXT]
    if k < PB[b, PB_LEN]:
        nxt = PT[b, k]
        PB[b, PB_NEXT] = k + 1
    else:
        nxt = INF  # (the loop has Python refill PT first unless it has no more)
    cost = PC[b]
    spent = 0.0
    for i in range(PB[b, PB_NLIVE]):
        a = PL[b, i]
        status, wid, _, _ = lim_reserve(LF, LI, WF, WI, DF, DI, a, now, cost, cost)
        if status != OK:
            return i, spent, nxt
        if cost > 0.0:
            WF[a, wid, W_SETTLED] += cost
        spent += cost
    return ALL_SPENT, spent, nxt
