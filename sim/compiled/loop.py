"""The compiled event loop: :class:`sim.model.engine.TierRun`'s HTTP lifecycle (open-loop
sources and closed-loop workers), step for step, over struct-of-arrays state.

One heap of ``(time, seq)`` events, ``seq`` taken in the order the SimPy model schedules
(SimPy breaks equal-time ties by its event id, which is that order): the feeder's wake
(``FEED``), a request's first send, send, paced send, arrival at the service, completion
and 430 reply, a client pool's wake, a closed-loop worker's wake and a billed websocket
stream's publish (:mod:`sim.compiled.publish`; the rest of the websocket side is Python's,
:mod:`sim.compiled.websockets`, and the loop returns at its events). Each handler is the
model's method of the same name with its float expressions written as the model writes
them (``now + (start - now + half_rtt)`` is not ``start + half_rtt``).

:func:`run_loop` runs events until it must return to Python, at an event boundary, with
one of the ``RC_*`` codes: a row buffer is full (flush it), the feeder needs the next
demand block, a state array needs room, a source's jitter block is spent, a worker needs
its next chunk of requests, a websocket event comes first, a publish needs Python (a
delivery could not spend; the stream's next times), or the heap is empty (done). The
caller does that and calls again: nothing is lost between calls, so a run is resumable
at every return and its memory stays flat in run length.
"""

from __future__ import annotations

import math

from .jit import njit_inline, njit_norc
from .policies import (
    AI_NCLOSE,
    C_DEADLINE,
    CI_ACTIVE,
    CI_CLOSED,
    CI_NEXT,
    CI_NREL,
    CI_POOL,
    CI_REUSABLE,
    G_AN,
    G_BLEN,
    G_CLOSED_RID,
    G_EVN,
    G_EXHAUSTED,
    G_FJ,
    G_J,
    G_JIT_LOW,
    G_NEXT_RID,
    G_NFREE_C,
    G_NFREE_R,
    G_NWAIT,
    G_QN,
    G_SEQ,
    G_WORKER,
    INF,
    LI_NWIN,
    NAN,
    OK,
    P_WAKE_AT,
    PI_ACCT,
    PI_HEAD,
    PI_MAX_STREAMS,
    PI_NWAIT,
    PI_WHEAD,
    PI_WTAIL,
    QUEUED,
    SI_JI,
    SI_PACED,
    SI_REQUESTS,
    earliest_release,
    fheap_push,
    lim_reserve,
    lim_retry_after,
    lim_settle,
    pace_delay,
    pool_acquire,
    refresh_pool,
    retry_delay,
    schedule_close,
    stream_on,
)
from .publish import ALL_SPENT, PB_ACTIVE, PB_DONE, PB_LEN, PB_NEXT, PB_NLIVE, publish

FEED_HORIZON_S = 1.0  # sim.model.engine.FEED_HORIZON_S (a test keeps them equal)

# event kinds
EV_FEED, EV_FIRST, EV_SEND, EV_PACED, EV_ARRIVE, EV_COMPLETE, EV_430, EV_WAKE, EV_WORKER, \
    EV_PUBLISH = range(10)
# return codes
RC_DONE, RC_FLUSH, RC_BLOCK, RC_GROW, RC_JITTER, RC_WORKER, RC_WS, RC_PUBLISH, RC_TIMES = \
    range(9)
# closed-loop workers: WKF[w, WK_*] floats, WKI[w, WKI_*] ints; their chunk of drawn
# requests: WCM[w, k] the method, WCF[w, WC_*, k] the rest (refilled by Python)
WK_PAUSE, WK_HALF, WK_NF = range(3)
WKI_SOURCE, WKI_KEY, WKI_REGION, WKI_K, WKI_N, WKI_NI = range(6)
WC_RESERVE, WC_ACTUAL, WC_SERVICE, WC_THINK, WC_NF = range(5)

# requests: RF[r, R_*], RI[r, RI_*]
(R_RESERVE, R_ACTUAL, R_SERVICE, R_TFIRST, R_TSEND, R_HALF, R_WAIT, R_SINCE,
 R_NF) = range(9)
(RI_RID, RI_SOURCE, RI_METHOD, RI_KEY, RI_REGION, RI_ATTEMPT, RI_CONN, RI_WID, RI_DAY,
 RI_ACCT, RI_NEXT, RI_WORKER, RI_NI) = range(13)
# rows: AO, a tuple of the attempt table's columns (numpy arrays of the recorder's
# types, in this order), QO the request table's; the engine checks the names against
# the recorder's layout (sim.model.recorder.ATTEMPT_COLUMNS / REQUEST_COLUMNS)
ATTEMPT_VALUES = ("request_id", "attempt", "source", "method", "key", "region", "t_send",
                  "t_end", "outcome", "cu_reserved", "cu_settled", "retry_after_s",
                  "phantom", "stream_wait_s")
REQUEST_VALUES = ("request_id", "source", "method", "key", "t_first", "t_end", "outcome",
                  "attempts")
# G's float twin: GF[GF_*]
(GF_NOW, GF_DAY_LIMIT, GF_LAST_FED, GF_DURATION, GF_WS_T, GF_HEAD_T, GF_CU_PUBLISH,
 GF_PUB_SPENT, GF_PUB_NEXT, GF_NF) = range(10)
# the demand buffer: DT[j] send time; DX[j, :] source, method, key, region, then the seq
# and request id the feeder gave it (seq -1: it went on the heap); DR[j, :] reserve,
# actual, service time, then the time of its first-send event
DX_SEQ, DX_RID, DX_NI = 4, 5, 6
DR_TIME, DR_NF = 3, 4
# sizes the loop checks room for: GS[GS_*]
(GS_MAX_POOL_CONNS, GS_OK, GS_430, GS_434, GS_WS_CU, GS_WS_KEY, GS_HEAD_KEY, GS_PUB_STREAM,
 GS_PUB_AT, GS_NI) = range(10)
# the websocket side (run by Python, sim.compiled.websockets): its next event's time
# GF[GF_WS_T] (inf: none) and key GS[GS_WS_KEY] = SimPy priority * NORMAL_KEY + event id;
# before returning RC_WS the loop leaves its own next event's in GF_HEAD_T, GS_HEAD_KEY;
# a billed stream's publishing is a loop event (sim.compiled.publish): RC_TIMES asks for
# stream GS_PUB_STREAM's next times, RC_PUBLISH for the rest of a publish in which the
# delivery to live connection GS_PUB_AT could not spend (GF_PUB_SPENT spent before it,
# GF_PUB_NEXT the stream's next time)
NORMAL_KEY = 1 << 62


@njit_inline
def ev_push(EF, EI, G, t, kind, obj):
    """Schedule event ``kind`` of ``obj`` at ``t`` (its seq: the next)."""
    seq = G[G_SEQ]
    G[G_SEQ] = seq + 1
    ev_push_seq(EF, EI, G, t, seq, kind, obj)


@njit_inline
def ev_push_seq(EF, EI, G, t, seq, kind, obj):
    """Schedule event ``kind`` of ``obj`` at ``t`` with the ``seq`` it was given.

    The heap is 4-ary (half the depth of a binary one); any heap pops the same order,
    since no two events share a ``(time, seq)``."""
    n = G[G_EVN]
    i = n
    while i > 0:
        parent = (i - 1) >> 2
        pt = EF[parent]
        if pt < t or (pt == t and EI[parent, 0] < seq):
            break
        EF[i] = pt
        EI[i, 0] = EI[parent, 0]
        EI[i, 1] = EI[parent, 1]
        EI[i, 2] = EI[parent, 2]
        i = parent
    EF[i] = t
    EI[i, 0] = seq
    EI[i, 1] = kind
    EI[i, 2] = obj
    G[G_EVN] = n + 1


@njit_inline
def _start_request(G, RF, RI, rfree, DT, DX, DR, HALF, j):
    """A request's state from demand row ``j`` (its id given when it was fed)."""
    G[G_NFREE_R] -= 1
    q = rfree[G[G_NFREE_R]]
    reg = DX[j, 3]
    tj = DT[j]
    RI[q, RI_RID] = DX[j, DX_RID]
    RI[q, RI_SOURCE] = DX[j, 0]
    RI[q, RI_METHOD] = DX[j, 1]
    RI[q, RI_KEY] = DX[j, 2]
    RI[q, RI_REGION] = reg
    RI[q, RI_ATTEMPT] = 1
    RI[q, RI_CONN] = -1
    RI[q, RI_WORKER] = -1
    RF[q, R_RESERVE] = DR[j, 0]
    RF[q, R_ACTUAL] = DR[j, 1]
    RF[q, R_SERVICE] = DR[j, 2]
    RF[q, R_TFIRST] = tj
    RF[q, R_TSEND] = tj
    RF[q, R_HALF] = HALF[reg]
    return q


@njit_inline
def _ws_first(GF, GS, t, seq):
    """Whether the websocket side's next event comes before the loop's (at ``t``,
    ``seq``) in SimPy's order, (time, priority, id): every loop event is NORMAL but the
    feeder's start (seq 0), SimPy's URGENT Initialize."""
    key = seq + NORMAL_KEY if seq > 0 else 0
    GF[GF_HEAD_T] = t
    GS[GS_HEAD_KEY] = key
    return GF[GF_WS_T] < t or GS[GS_WS_KEY] < key


@njit_inline
def ev_pop(EF, EI, G):
    """Remove the earliest event (the heap is not empty)."""
    n = G[G_EVN] - 1
    G[G_EVN] = n
    lt, ls, lk, lo = EF[n], EI[n, 0], EI[n, 1], EI[n, 2]
    i = 0
    while True:
        first = 4 * i + 1
        if first >= n:
            break
        best = first
        bt, bs = EF[first], EI[first, 0]
        last = first + 4 if first + 4 < n else n
        for c in range(first + 1, last):
            ct = EF[c]
            if ct < bt or (ct == bt and EI[c, 0] < bs):
                best, bt, bs = c, ct, EI[c, 0]
        if bt > lt or (bt == lt and bs > ls):
            break
        EF[i] = bt
        EI[i, 0] = bs
        EI[i, 1] = EI[best, 1]
        EI[i, 2] = EI[best, 2]
        i = best
    if n > 0:
        EF[i] = lt
        EI[i, 0] = ls
        EI[i, 1] = lk
        EI[i, 2] = lo


@njit_inline
def _release_at(CF, CI, CR, PF, PI, AI, KF, KI, EF, EI, G, GF, c, t):
    """Connection.release_at: the stream is released when the reply arrives at ``t``."""
    CI[c, CI_NREL] = fheap_push(CR[c], CI[c, CI_NREL], t)
    p = CI[c, CI_POOL]
    if not CI[c, CI_REUSABLE]:
        CF[c, C_DEADLINE] = t
        schedule_close(CF, CI, AI, KF, KI, PI[p, PI_ACCT], c)
    if PI[p, PI_NWAIT] > 0:
        _wake_at(PF, EF, EI, G, GF, p, t)


@njit_inline
def _wake_at(PF, EF, EI, G, GF, p, t):
    """ClientPool.wake_at: a timeout of ``max(0.0, t - now)``."""
    if t < PF[p, P_WAKE_AT]:
        PF[p, P_WAKE_AT] = t
        now = GF[GF_NOW]
        d = t - now
        ev_push(EF, EI, G, now + (d if d > 0.0 else 0.0), EV_WAKE, p)


@njit_inline
def _attempt_row(AO, G, RF, RI, r, t_end, outcome, reserved, settled, retry_after,
                 phantom):
    n = G[G_AN]
    AO[0][n] = RI[r, RI_RID]
    AO[1][n] = RI[r, RI_ATTEMPT]
    AO[2][n] = RI[r, RI_SOURCE]
    AO[3][n] = RI[r, RI_METHOD]
    AO[4][n] = RI[r, RI_KEY]
    AO[5][n] = RI[r, RI_REGION]
    AO[6][n] = RF[r, R_TSEND]
    AO[7][n] = t_end
    AO[8][n] = outcome
    AO[9][n] = reserved
    AO[10][n] = settled
    AO[11][n] = retry_after
    AO[12][n] = phantom
    AO[13][n] = RF[r, R_WAIT]
    G[G_AN] = n + 1


@njit_inline
def _request_row(QO, G, RF, RI, r, t_end, outcome):
    n = G[G_QN]
    QO[0][n] = RI[r, RI_RID]
    QO[1][n] = RI[r, RI_SOURCE]
    QO[2][n] = RI[r, RI_METHOD]
    QO[3][n] = RI[r, RI_KEY]
    QO[4][n] = RF[r, R_TFIRST]
    QO[5][n] = t_end
    QO[6][n] = outcome
    QO[7][n] = RI[r, RI_ATTEMPT]
    G[G_QN] = n + 1


@njit_inline
def _finished(EF, EI, G, RI, WKF, r, now):
    """TierRun._finished: a closed-loop request's worker thinks, then wakes."""
    w = RI[r, RI_WORKER]
    if w >= 0:
        ev_push(EF, EI, G, now + (WKF[w, WK_HALF] + WKF[w, WK_PAUSE]), EV_WORKER, w)


@njit_inline
def _free_request(G, rfree, r):
    rfree[G[G_NFREE_R]] = r
    G[G_NFREE_R] += 1


@njit_norc
def run_loop(G, GF, GS, EF, EI, RF, RI, rfree, CF, CI, CR, cfree, PF, PI, AF, AI, KF, KI,
             OR, OI, LF, LI, WF, WI, DF, DI, SF, SI, JU, DT, DX, DR, GATE, AFTER, RETRY_ON,
             HALF, KEY_ACCT, POOL_OF, AO, QO, WKF, WKI, WCM, WCF, PB, PC, PT, PL):
    """Run events until Python must act; returns an ``RC_*`` code (see the module)."""
    n_out = AO[0].shape[0]
    n_acct = LF.shape[0]
    n_conn_acct = AI.shape[0]
    ok_code, c430, c434, cwscu = GS[GS_OK], GS[GS_430], GS[GS_434], GS[GS_WS_CU]
    while True:
        if G[G_AN] >= n_out or G[G_QN] >= n_out:
            return RC_FLUSH
        if G[G_JIT_LOW]:
            return RC_JITTER
        # The next event: the heap's top, or the next fed arrival (a sorted run of
        # (time, seq) the feeder scheduled, merged here instead of pushed on the heap).
        fj, j = G[G_FJ], G[G_J]
        while fj < j and DX[fj, DX_SEQ] < 0:  # fed onto the heap instead
            fj += 1
        G[G_FJ] = fj
        arrival = False
        if fj < j:
            te = DR[fj, DR_TIME]
            arrival = G[G_EVN] == 0 or te < EF[0] or (te == EF[0]
                                                        and DX[fj, DX_SEQ] < EI[0, 0])
        if arrival:
            t = te
            kind = EV_FIRST
        elif G[G_EVN] == 0:
            if GF[GF_WS_T] < INF:
                GF[GF_HEAD_T] = INF
                return RC_WS
            return RC_DONE
        else:
            t = EF[0]
            kind = EI[0, 1]
        if GF[GF_WS_T] <= t and _ws_first(GF, GS, t, DX[fj, DX_SEQ] if arrival else EI[0, 0]):
            return RC_WS
        if kind == EV_PUBLISH and PB[EI[0, 2], PB_NEXT] == PB[EI[0, 2], PB_LEN] and \
                not PB[EI[0, 2], PB_DONE]:
            GS[GS_PUB_STREAM] = EI[0, 2]
            return RC_TIMES
        left = G[G_BLEN] - fj
        if kind == EV_WORKER and t < GF[GF_DURATION] and \
                WKI[EI[0, 2], WKI_K] == WKI[EI[0, 2], WKI_N]:
            G[G_WORKER] = EI[0, 2]  # its next chunk of requests and think times
            return RC_WORKER
        if kind == EV_FEED and not G[G_EXHAUSTED] and (
                j == G[G_BLEN] or DT[G[G_BLEN] - 1] < t + FEED_HORIZON_S):
            return RC_BLOCK
        if (G[G_EVN] + left + G[G_NWAIT] + 8 > EF.shape[0] or G[G_NFREE_R] < left + 1
                or G[G_NFREE_C] < 1 or t >= GF[GF_DAY_LIMIT]):
            return RC_GROW
        for a in range(n_conn_acct):
            if AI[a, AI_NCLOSE] + GS[GS_MAX_POOL_CONNS] + 4 > KF.shape[1]:
                return RC_GROW
        for a in range(n_acct):
            if LI[a, LI_NWIN] + 2 > WF.shape[1]:
                return RC_GROW
        now = t
        GF[GF_NOW] = now
        if arrival:
            r = _start_request(G, RF, RI, rfree, DT, DX, DR, HALF, fj)
            G[G_FJ] = fj + 1
        else:
            r = EI[0, 2]
            ev_pop(EF, EI, G)

        if kind == EV_FEED:
            until = now + FEED_HORIZON_S
            more = True
            blen = G[G_BLEN]
            while True:
                if j == blen:
                    more = False  # (the block check above: only once the demand is over)
                    break
                tj = DT[j]
                if tj >= until:
                    break
                te = now + (tj - now)
                seq = G[G_SEQ]
                G[G_SEQ] = seq + 1
                DX[j, DX_RID] = G[G_NEXT_RID]
                G[G_NEXT_RID] += 1
                if G[G_FJ] < j and te < GF[GF_LAST_FED]:
                    # (rounding put it before a fed arrival: the heap keeps the order)
                    q = _start_request(G, RF, RI, rfree, DT, DX, DR, HALF, j)
                    ev_push_seq(EF, EI, G, te, seq, EV_FIRST, q)
                    DX[j, DX_SEQ] = -1
                else:
                    DR[j, DR_TIME] = te
                    DX[j, DX_SEQ] = seq
                    GF[GF_LAST_FED] = te
                j += 1
            G[G_J] = j
            if more:
                fl = float(math.floor(DT[j]))
                ev_push(EF, EI, G, now + ((fl if fl > until else until) - now), EV_FEED, -1)
            continue

        if kind == EV_PUBLISH:  # Websockets._publish
            failed, spent, nxt = publish(PB, PC, PT, PL, LF, LI, WF, WI, DF, DI, r, now)
            if failed != ALL_SPENT:
                GS[GS_PUB_STREAM] = r
                GS[GS_PUB_AT] = failed
                GF[GF_PUB_SPENT] = spent
                GF[GF_PUB_NEXT] = nxt
                return RC_PUBLISH
            GF[GF_CU_PUBLISH] += spent
            if PB[r, PB_NLIVE] > 0 and nxt < INF:
                ev_push(EF, EI, G, now + (nxt - now), EV_PUBLISH, r)
            else:
                PB[r, PB_ACTIVE] = 0
            continue

        if kind == EV_WAKE:  # ClientPool._wake
            p = r
            if now < PF[p, P_WAKE_AT]:
                continue
            PF[p, P_WAKE_AT] = INF
            refresh_pool(CI, CR, PI, p, now)
            most = PI[p, PI_MAX_STREAMS]
            while PI[p, PI_NWAIT] > 0:
                c = PI[p, PI_HEAD]
                while c >= 0:
                    if CI[c, CI_ACTIVE] < most and not CI[c, CI_CLOSED]:
                        break
                    c = CI[c, CI_NEXT]
                if c < 0:
                    break
                q = PI[p, PI_WHEAD]
                PI[p, PI_WHEAD] = RI[q, RI_NEXT]
                if PI[p, PI_WHEAD] < 0:
                    PI[p, PI_WTAIL] = -1
                PI[p, PI_NWAIT] -= 1
                G[G_NWAIT] -= 1
                start = stream_on(CF, CI, PF, p, c, now)
                RI[q, RI_CONN] = c
                RF[q, R_WAIT] = start - RF[q, R_SINCE]
                ev_push(EF, EI, G, now + (start - now + RF[q, R_HALF]), EV_ARRIVE, q)
            if PI[p, PI_NWAIT] > 0:
                nxt, found = earliest_release(CI, CR, PI, p, 0.0)
                if found:
                    _wake_at(PF, EF, EI, G, GF, p, nxt)
            continue

        if kind == EV_WORKER:  # TierRun._wake: a worker sends its next request
            w = r
            if now >= GF[GF_DURATION]:
                continue
            k = WKI[w, WKI_K]
            G[G_NFREE_R] -= 1
            r = rfree[G[G_NFREE_R]]
            reg = WKI[w, WKI_REGION]
            RI[r, RI_RID] = G[G_CLOSED_RID]
            G[G_CLOSED_RID] += 1
            RI[r, RI_SOURCE] = WKI[w, WKI_SOURCE]
            RI[r, RI_METHOD] = WCM[w, k]
            RI[r, RI_KEY] = WKI[w, WKI_KEY]
            RI[r, RI_REGION] = reg
            RI[r, RI_ATTEMPT] = 1
            RI[r, RI_CONN] = -1
            RI[r, RI_WORKER] = w
            RF[r, R_RESERVE] = WCF[w, WC_RESERVE, k]
            RF[r, R_ACTUAL] = WCF[w, WC_ACTUAL, k]
            RF[r, R_SERVICE] = WCF[w, WC_SERVICE, k]
            RF[r, R_TFIRST] = now
            RF[r, R_TSEND] = now
            RF[r, R_HALF] = WKF[w, WK_HALF]
            SI[WKI[w, WKI_SOURCE], SI_REQUESTS] += 1
            WKF[w, WK_PAUSE] = WCF[w, WC_THINK, k]
            WKI[w, WKI_K] = k + 1
            kind = EV_SEND
        s = RI[r, RI_SOURCE]
        if kind == EV_FIRST:
            SI[s, SI_REQUESTS] += 1
            kind = EV_SEND
        if kind == EV_SEND and SI[s, SI_PACED]:
            wait = pace_delay(SF, s, now, RF[r, R_RESERVE])
            if wait > 0.0:
                ev_push(EF, EI, G, now + wait, EV_PACED, r)
                continue
        if kind == EV_SEND or kind == EV_PACED:  # noqa: SIM109 (_transmit; numba)
            p = POOL_OF[s, RI[r, RI_REGION]]
            start, c = pool_acquire(CF, CI, CR, PF, PI, AF, AI, KF, KI, OR, OI, G, cfree, p,
                                    now)
            if start >= 0.0:
                RI[r, RI_CONN] = c
                RF[r, R_WAIT] = start - now
                ev_push(EF, EI, G, now + (start - now + RF[r, R_HALF]), EV_ARRIVE, r)
            elif start == QUEUED:  # ClientPool.enqueue
                RF[r, R_SINCE] = now
                RI[r, RI_NEXT] = -1
                tail = PI[p, PI_WTAIL]
                if tail >= 0:
                    RI[tail, RI_NEXT] = r
                else:
                    PI[p, PI_WHEAD] = r
                PI[p, PI_WTAIL] = r
                PI[p, PI_NWAIT] += 1
                G[G_NWAIT] += 1
                refresh_pool(CI, CR, PI, p, now)
                first, _ = earliest_release(CI, CR, PI, p, now)
                _wake_at(PF, EF, EI, G, GF, p, first)
            else:
                RI[r, RI_CONN] = -1
                RF[r, R_WAIT] = 0.0
                ev_push(EF, EI, G, now + RF[r, R_HALF], EV_430, r)
            continue

        outcome = ok_code
        retry_after = NAN
        phantom = False
        if kind == EV_ARRIVE:
            gate = GATE[s, RI[r, RI_KEY], RI[r, RI_METHOD]]
            if gate < 0:
                a = KEY_ACCT[RI[r, RI_KEY]]
                status, wid, day, phantom = lim_reserve(LF, LI, WF, WI, DF, DI, a, now,
                                                        RF[r, R_RESERVE], RF[r, R_ACTUAL])
                if status == OK:
                    RI[r, RI_WID] = wid
                    RI[r, RI_DAY] = day
                    RI[r, RI_ACCT] = a
                    ev_push(EF, EI, G, now + RF[r, R_SERVICE], EV_COMPLETE, r)
                    continue
                outcome = AFTER[RI[r, RI_METHOD], status]
                if outcome == c434 or outcome == cwscu:  # noqa: SIM109 (numba: no set)
                    retry_after = float(lim_retry_after(LF, LI, a, now))
            else:
                outcome = gate
        elif kind == EV_430:
            outcome = c430
        else:  # EV_COMPLETE
            reserve, actual = RF[r, R_RESERVE], RF[r, R_ACTUAL]
            lim_settle(LF, LI, WF, WI, DF, DI, RI[r, RI_ACCT], now, RI[r, RI_WID],
                       RI[r, RI_DAY], reserve, actual)
            t_back = now + RF[r, R_HALF]
            c = RI[r, RI_CONN]
            if c >= 0:
                _release_at(CF, CI, CR, PF, PI, AI, KF, KI, EF, EI, G, GF, c, t_back)
            _attempt_row(AO, G, RF, RI, r, t_back, ok_code, reserve, actual, NAN,
                         False)
            _request_row(QO, G, RF, RI, r, t_back, ok_code)
            _finished(EF, EI, G, RI, WKF, r, now)
            _free_request(G, rfree, r)
            continue

        # TierRun._refused
        t_back = now + RF[r, R_HALF]
        c = RI[r, RI_CONN]
        if c >= 0:
            _release_at(CF, CI, CR, PF, PI, AI, KF, KI, EF, EI, G, GF, c, t_back)
        _attempt_row(AO, G, RF, RI, r, t_back, outcome, 0.0, 0.0, retry_after,
                     phantom)
        if RETRY_ON[s, outcome]:
            wait = retry_delay(SF, SI, JU, s, RI[r, RI_ATTEMPT], retry_after)
            if SI[s, SI_JI] == JU.shape[1]:
                G[G_JIT_LOW] = 1
            if wait >= 0.0:
                RI[r, RI_ATTEMPT] += 1
                RF[r, R_TSEND] = t_back + wait
                ev_push(EF, EI, G, now + (RF[r, R_HALF] + wait), EV_SEND, r)
                continue
        _request_row(QO, G, RF, RI, r, t_back, outcome)
        _finished(EF, EI, G, RI, WKF, r, now)
        _free_request(G, rfree, r)
    return RC_DONE

