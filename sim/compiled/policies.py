"""The policy state machines as plain functions over state arrays, in the numba subset.

Each is the twin of a Python class of :mod:`sim.policy` / :mod:`sim.model.transport`, step
for step and with its float expressions written the same way, so that the compiled
engine's answers are that class's, bit for bit (``tests/unit/compiled`` drives both with
random operation sequences):

* the CU limiter (:class:`~sim.policy.limiter.CULimiter`): :func:`lim_reserve`,
  :func:`lim_settle`, :func:`lim_retry_after`, the window roll and the daily ledger, both
  refund rules, ``epoch`` / ``first-hit`` / ``utc`` windows with their phase;
* the account's connection limits (:class:`~sim.policy.connections.AccountConnections`)
  and a client's pool (:class:`~sim.model.transport.ClientPool`): :func:`pool_acquire`,
  :func:`pool_enqueue`, :func:`conn_release_at`, :func:`try_open`, the lazy closes;
* retry decisions and backoff (:class:`~sim.policy.retry.RetryDecider`), pacing
  (:class:`~sim.policy.pacing.TokenBucket`).

Each is an njit function (``.py_func`` is the plain Python one); the state layouts (the
``L_*``, ``C_*``, ``P_*``, ``A_*``, ``S_*`` field numbers) are named once, here. The
existing classes stay as they are (the SimPy model, the emulator and the trace replay
use them): adapters over arrays would slow the SimPy model (an array access per
attribute in CPython) for no change in output.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import njit_inline

DAY_S = 86_400.0
_EPS = 1e-9
INF = math.inf
NAN = math.nan

# Limiter status codes (sim.policy.limiter)
OK, THROTTLED, NO_ALLOWANCE, OVERSIZED = 0, 1, 2, 3

# -- limiter state: LF[a, L_*] floats, LI[a, LI_*] ints --------------------------------
(L_BUDGET, L_WINDOW, L_LIMIT, L_SHIFT, L_ALLOW, L_DAYOFF, L_START, L_END, L_USED, L_PEX,
 L_PEXALL, L_DAYEND, L_DAYUSED, L_NF) = range(14)
LI_EPOCH, LI_ORIGIN, LI_HAS_ALLOW, LI_WID, LI_K, LI_DAY, LI_NWIN, LI_NI = range(8)
# window stats: WF[a, w, W_*] floats, WI[a, w, WI_*] ints
W_START, W_RESERVED, W_SETTLED, W_PEAK, W_NF = range(5)
WI_ADMITTED, WI_THROTTLED, WI_PHANTOM, WI_NI = range(4)
# daily ledger by UTC day: DF[a, day, D_*]; DI[a, day] 1 once daily_used[day] is set
D_USED, D_EXHAUSTED, D_NF = range(3)


def limiter_state(budget_cu, window_s, limit, shift, allowance, day_offset_s, epoch, origin,
                  n_windows=64, n_days=4):
    """Fresh state arrays of one limiter (as a new :class:`CULimiter`): LF, LI, WF, WI,
    DF, DI, each with a leading account axis of 1."""
    LF = np.zeros((1, L_NF))
    LI = np.zeros((1, LI_NI), dtype=np.int64)
    LF[0, L_BUDGET], LF[0, L_WINDOW], LF[0, L_LIMIT], LF[0, L_SHIFT] = (
        budget_cu, window_s, limit, shift)
    LF[0, L_ALLOW] = 0.0 if allowance is None else allowance
    LF[0, L_DAYOFF] = day_offset_s
    LF[0, L_START] = LF[0, L_END] = LF[0, L_DAYEND] = -INF
    LI[0, LI_EPOCH], LI[0, LI_ORIGIN] = int(epoch), int(origin)
    LI[0, LI_HAS_ALLOW] = int(allowance is not None)
    LI[0, LI_WID] = LI[0, LI_K] = LI[0, LI_DAY] = -1
    DF = np.zeros((1, n_days, D_NF))
    DF[:, :, D_EXHAUSTED] = NAN
    return (LF, LI, np.zeros((1, n_windows, W_NF)), np.zeros((1, n_windows, WI_NI), np.int64),
            DF, np.zeros((1, n_days), np.int8))


def limiter_state_of(lim, n_windows=64, n_days=4):
    """:func:`limiter_state` of a fresh :class:`~sim.policy.limiter.CULimiter`'s settings."""
    return limiter_state(lim.budget_cu, lim.window_s, lim._limit, lim._shift,
                         lim.daily_allowance_cu, lim.day_offset_s, lim._epoch, lim._origin,
                         n_windows, n_days)


@njit_inline
def lim_open_window(LF, LI, WF, WI, a, start, k):
    wid = LI[a, LI_NWIN]
    LI[a, LI_NWIN] = wid + 1
    WF[a, wid, W_START] = start
    WF[a, wid, W_RESERVED] = 0.0
    WF[a, wid, W_SETTLED] = 0.0
    WF[a, wid, W_PEAK] = 0.0
    WI[a, wid, WI_ADMITTED] = 0
    WI[a, wid, WI_THROTTLED] = 0
    WI[a, wid, WI_PHANTOM] = 0
    LI[a, LI_WID] = wid
    LI[a, LI_K] = k
    LF[a, L_START] = start
    LF[a, L_END] = start + LF[a, L_WINDOW]
    LF[a, L_USED] = 0.0
    LF[a, L_PEX] = 0.0


@njit_inline
def lim_roll(LF, LI, WF, WI, a, now):
    """CULimiter._roll: bring the window up to ``now``; False if none is open."""
    if now < LF[a, L_END]:
        return True
    if LI[a, LI_EPOCH]:
        w = LF[a, L_WINDOW]
        k = math.floor((now + LF[a, L_SHIFT]) / w)
        if LI[a, LI_K] + 1 > k:
            k = LI[a, LI_K] + 1
        lim_open_window(LF, LI, WF, WI, a, k * w - LF[a, L_SHIFT], k)
        return True
    return False


@njit_inline
def lim_roll_day(LF, LI, a, now):
    if now >= LF[a, L_DAYEND]:
        day = int((now + LF[a, L_DAYOFF]) // DAY_S)
        LI[a, LI_DAY] = day
        LF[a, L_DAYEND] = (day + 1) * DAY_S - LF[a, L_DAYOFF]
        LF[a, L_DAYUSED] = 0.0


@njit_inline
def lim_reserve(LF, LI, WF, WI, DF, DI, a, now, cost, actual):
    """CULimiter.reserve: ``(status, window, day, phantom)``."""
    if cost <= 0.0:
        return OK, -1, -1, False
    if cost > LF[a, L_LIMIT]:
        return OVERSIZED, -1, -1, False
    has_allow = LI[a, LI_HAS_ALLOW]
    if has_allow:
        if now >= LF[a, L_DAYEND]:
            lim_roll_day(LF, LI, a, now)
        if LF[a, L_DAYUSED] + cost > LF[a, L_ALLOW] * (1 + _EPS):
            day = LI[a, LI_DAY]
            if DF[a, day, D_EXHAUSTED] != DF[a, day, D_EXHAUSTED]:  # setdefault
                DF[a, day, D_EXHAUSTED] = now
            return NO_ALLOWANCE, -1, day, False
    if now >= LF[a, L_END] and not lim_roll(LF, LI, WF, WI, a, now):
        lim_open_window(LF, LI, WF, WI, a, now, -1)  # first-hit
    wid = LI[a, LI_WID]
    day = LI[a, LI_DAY]
    limit = LF[a, L_LIMIT]
    used = LF[a, L_USED] + cost
    if used > limit:
        WI[a, wid, WI_THROTTLED] += 1
        pending = LF[a, L_PEX] if LI[a, LI_ORIGIN] else LF[a, L_PEXALL]
        if LF[a, L_USED] - pending + cost <= limit:
            WI[a, wid, WI_PHANTOM] += 1
            return THROTTLED, wid, day, True
        return THROTTLED, wid, day, False
    LF[a, L_USED] = used
    if used > WF[a, wid, W_PEAK]:
        WF[a, wid, W_PEAK] = used
    WF[a, wid, W_RESERVED] += cost
    WI[a, wid, WI_ADMITTED] += 1
    excess = cost - actual
    if excess > 0.0:
        LF[a, L_PEX] += excess
        LF[a, L_PEXALL] += excess
    if has_allow:
        LF[a, L_DAYUSED] += cost
        DF[a, day, D_USED] = LF[a, L_DAYUSED]
        DI[a, day] = 1
    return OK, wid, day, False


@njit_inline
def lim_settle(LF, LI, WF, WI, DF, DI, a, now, wid, day, reserved, actual):
    """CULimiter.settle of a reservation booked in window ``wid`` on ``day``."""
    if reserved <= 0.0:
        return
    WF[a, wid, W_SETTLED] += actual
    refund = reserved - actual
    if refund <= 0.0:
        return
    LF[a, L_PEXALL] -= refund
    if now < LF[a, L_END] or lim_roll(LF, LI, WF, WI, a, now):
        if wid == LI[a, LI_WID]:
            LF[a, L_PEX] -= refund
            used = LF[a, L_USED] - refund
            LF[a, L_USED] = used if used > 0.0 else 0.0
        elif not LI[a, LI_ORIGIN]:
            used = LF[a, L_USED] - refund
            LF[a, L_USED] = used if used > 0.0 else 0.0
    if LI[a, LI_HAS_ALLOW]:
        if now >= LF[a, L_DAYEND]:
            lim_roll_day(LF, LI, a, now)
        if day == LI[a, LI_DAY]:
            left = LF[a, L_DAYUSED] - refund
            LF[a, L_DAYUSED] = left if left > 0.0 else 0.0
            DF[a, day, D_USED] = LF[a, L_DAYUSED]
            DI[a, day] = 1


@njit_inline
def lim_retry_after(LF, LI, a, now):
    """CULimiter.retry_after: whole seconds (at least 1) to the next window's start."""
    if LI[a, LI_EPOCH]:
        w = LF[a, L_WINDOW]
        next_start = (math.floor((now + LF[a, L_SHIFT]) / w) + 1) * w - LF[a, L_SHIFT]
    else:
        next_start = LF[a, L_END] if now < LF[a, L_END] else now
    wait = math.ceil(next_start - now)
    if wait < 1:
        wait = 1
    if now + wait < next_start:
        wait += 1
    return wait


# -- connections: CF[c, C_*], CI[c, CI_*]; CR[c, :] the heap of its stream releases ----
C_READY, C_DEADLINE, C_NF = range(3)
(CI_POOL, CI_ACTIVE, CI_NREL, CI_CLOSED, CI_REUSABLE, CI_NEXT, CI_PREV, CI_REFS,
 CI_NI) = range(9)
# client pools: PF[p, P_*], PI[p, PI_*]; waiting requests are a list through RI[r, R_NEXT]
P_CONNECT_S, P_IDLE, P_WAKE_AT, P_NF = range(4)
(PI_ACCT, PI_HOST, PI_MAX_STREAMS, PI_MAX_CONNS, PI_REUSE, PI_NCONNS, PI_HEAD, PI_TAIL,
 PI_WHEAD, PI_WTAIL, PI_NWAIT, PI_NI) = range(12)
# account connection limits: AF[a, A_*], AI[a, AI_*]; KF/KI[a, :] the closing heap of
# (deadline, seq, conn); OR[a, host, :] a ring of the last second's opens, OI its head/count
A_MAX_ACTIVE, A_MAX_OPENS, A_NF = range(3)
(AI_ACTIVE, AI_PEAK, AI_OPENED, AI_REFUSED, AI_SEQ, AI_NCLOSE, AI_LIMITED, AI_NI) = range(8)
OI_HEAD, OI_COUNT = 0, 1

REFUSED = -1.0
QUEUED = -2.0


@njit_inline
def fheap_push(h, n, v):
    """Push ``v`` on the float min-heap ``h[:n]``; returns the new size."""
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if h[parent] <= v:
            break
        h[i] = h[parent]
        i = parent
    h[i] = v
    return n + 1


@njit_inline
def fheap_pop(h, n):
    """Pop the smallest of ``h[:n]`` (n > 0); returns the new size."""
    n -= 1
    last = h[n]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and h[child + 1] < h[child]:
            child += 1
        if h[child] >= last:
            break
        h[i] = h[child]
        i = child
    if n > 0:
        h[i] = last
    return n


@njit_inline
def kheap_push(KF, KI, a, n, deadline, seq, conn):
    """Push ``(deadline, seq, conn)`` on account ``a``'s closing heap of ``n`` entries."""
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        pd = KF[a, parent]
        if pd < deadline or (pd == deadline and KI[a, parent, 0] < seq):
            break
        KF[a, i] = pd
        KI[a, i, 0] = KI[a, parent, 0]
        KI[a, i, 1] = KI[a, parent, 1]
        i = parent
    KF[a, i] = deadline
    KI[a, i, 0] = seq
    KI[a, i, 1] = conn


@njit_inline
def kheap_pop(KF, KI, a, n):
    """Remove the top of account ``a``'s closing heap of ``n`` entries (n > 0)."""
    n -= 1
    ld, ls, lc = KF[a, n], KI[a, n, 0], KI[a, n, 1]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        r = child + 1
        if r < n and (KF[a, r] < KF[a, child]
                      or (KF[a, r] == KF[a, child] and KI[a, r, 0] < KI[a, child, 0])):
            child = r
        cd = KF[a, child]
        if cd > ld or (cd == ld and KI[a, child, 0] > ls):
            break
        KF[a, i] = cd
        KI[a, i, 0] = KI[a, child, 0]
        KI[a, i, 1] = KI[a, child, 1]
        i = child
    if n > 0:
        KF[a, i] = ld
        KI[a, i, 0] = ls
        KI[a, i, 1] = lc


@njit_inline
def conn_refresh(CI, CR, c, now):
    """Connection.refresh: release the streams whose replies arrived by ``now``."""
    n = CI[c, CI_NREL]
    h = CR[c]
    while n > 0 and h[0] <= now:
        n = fheap_pop(h, n)
        CI[c, CI_ACTIVE] -= 1
    CI[c, CI_NREL] = n


@njit_inline
def schedule_close(CF, CI, AI, KF, KI, a, c):
    """AccountConnections.schedule_close."""
    AI[a, AI_SEQ] += 1
    n = AI[a, AI_NCLOSE]
    kheap_push(KF, KI, a, n, CF[c, C_DEADLINE], AI[a, AI_SEQ], c)
    AI[a, AI_NCLOSE] = n + 1
    CI[c, CI_REFS] += 1


@njit_inline
def pool_forget(CI, PI, c):
    p = CI[c, CI_POOL]
    prev, nxt = CI[c, CI_PREV], CI[c, CI_NEXT]
    if prev >= 0:
        CI[prev, CI_NEXT] = nxt
    else:
        PI[p, PI_HEAD] = nxt
    if nxt >= 0:
        CI[nxt, CI_PREV] = prev
    else:
        PI[p, PI_TAIL] = prev
    PI[p, PI_NCONNS] -= 1


@njit_inline
def conn_free(CI, G, cfree, c):
    """A closed connection no heap entry names any more: its row can be used again."""
    if CI[c, CI_CLOSED] and CI[c, CI_REFS] == 0:
        cfree[G[G_NFREE_C]] = c
        G[G_NFREE_C] += 1
        CI[c, CI_CLOSED] = 2  # freed (and still closed)


@njit_inline
def close_if_idle(CF, CI, CR, PF, PI, AI, KF, KI, G, cfree, a, c, now):
    """AccountConnections.close_if_idle."""
    if CI[c, CI_CLOSED]:
        return True
    if CF[c, C_DEADLINE] > now:
        return False
    conn_refresh(CI, CR, c, now)
    if CI[c, CI_ACTIVE] > 0:
        n = CI[c, CI_NREL]
        if n > 0:
            last = CR[c, 0]
            for i in range(1, n):
                if CR[c, i] > last:
                    last = CR[c, i]
        else:
            last = now
        # never at or before now (policy.connections: idle_timeout_s = 0 would spin)
        CF[c, C_DEADLINE] = max(last + PF[CI[c, CI_POOL], P_IDLE], np.nextafter(now, np.inf))
        schedule_close(CF, CI, AI, KF, KI, a, c)
        return False
    CI[c, CI_CLOSED] = 1
    AI[a, AI_ACTIVE] -= 1
    pool_forget(CI, PI, c)
    conn_free(CI, G, cfree, c)
    return True


@njit_inline
def expire(CF, CI, CR, PF, PI, AI, KF, KI, G, cfree, a, now):
    """AccountConnections._expire: the closes due by ``now``."""
    while AI[a, AI_NCLOSE] > 0 and KF[a, 0] <= now:
        deadline, c = KF[a, 0], KI[a, 0, 1]
        kheap_pop(KF, KI, a, AI[a, AI_NCLOSE])
        AI[a, AI_NCLOSE] -= 1
        CI[c, CI_REFS] -= 1
        if CI[c, CI_CLOSED]:
            conn_free(CI, G, cfree, c)
            continue
        if CF[c, C_DEADLINE] > deadline:
            schedule_close(CF, CI, AI, KF, KI, a, c)
            continue
        close_if_idle(CF, CI, CR, PF, PI, AI, KF, KI, G, cfree, a, c, now)


@njit_inline
def try_open(CF, CI, CR, PF, PI, AF, AI, KF, KI, OR, OI, G, cfree, a, host, now):
    """AccountConnections.try_open: admit a new connection to ``host`` or refuse it."""
    expire(CF, CI, CR, PF, PI, AI, KF, KI, G, cfree, a, now)
    if AI[a, AI_LIMITED]:
        head, count = OI[a, host, OI_HEAD], OI[a, host, OI_COUNT]
        cap = OR.shape[2]
        while count > 0 and OR[a, host, head] <= now - 1.0:
            head += 1
            if head == cap:
                head = 0
            count -= 1
        OI[a, host, OI_HEAD] = head
        OI[a, host, OI_COUNT] = count
        if AI[a, AI_ACTIVE] >= AF[a, A_MAX_ACTIVE] or count >= AF[a, A_MAX_OPENS]:
            AI[a, AI_REFUSED] += 1
            return False
        tail = head + count
        if tail >= cap:
            tail -= cap
        OR[a, host, tail] = now
        OI[a, host, OI_COUNT] = count + 1
    AI[a, AI_ACTIVE] += 1
    AI[a, AI_OPENED] += 1
    if AI[a, AI_ACTIVE] > AI[a, AI_PEAK]:
        AI[a, AI_PEAK] = AI[a, AI_ACTIVE]
    return True


@njit_inline
def stream_on(CF, CI, PF, p, c, now):
    """ClientPool._stream_on: a stream on ``c`` for a request sent at ``now``."""
    CI[c, CI_ACTIVE] += 1
    ready = CF[c, C_READY]
    start = now if now >= ready else ready
    if CI[c, CI_REUSABLE]:
        deadline = start + PF[p, P_IDLE]
        if deadline > CF[c, C_DEADLINE]:
            CF[c, C_DEADLINE] = deadline
    return start


@njit_inline
def pool_acquire(CF, CI, CR, PF, PI, AF, AI, KF, KI, OR, OI, G, cfree, p, now):
    """ClientPool.acquire: ``(send time, connection)``, or ``(QUEUED or REFUSED, -1)``."""
    a = PI[p, PI_ACCT]
    reuse = PI[p, PI_REUSE]
    if reuse and PI[p, PI_NWAIT] == 0:
        most = PI[p, PI_MAX_STREAMS]
        c = PI[p, PI_HEAD]
        while c >= 0:
            nxt = CI[c, CI_NEXT]
            if CF[c, C_DEADLINE] <= now and close_if_idle(CF, CI, CR, PF, PI, AI, KF, KI, G,
                                                          cfree, a, c, now):
                c = nxt
                continue
            if CI[c, CI_ACTIVE] >= most:
                conn_refresh(CI, CR, c, now)
            if CI[c, CI_ACTIVE] < most:
                CI[c, CI_ACTIVE] += 1
                ready = CF[c, C_READY]
                start = ready if ready > now else now
                deadline = start + PF[p, P_IDLE]
                if deadline > CF[c, C_DEADLINE]:
                    CF[c, C_DEADLINE] = deadline
                return start, c
            c = nxt
    if PI[p, PI_NCONNS] < PI[p, PI_MAX_CONNS] or not reuse:
        if not try_open(CF, CI, CR, PF, PI, AF, AI, KF, KI, OR, OI, G, cfree, a,
                        PI[p, PI_HOST], now):
            return REFUSED, -1
        G[G_NFREE_C] -= 1
        c = cfree[G[G_NFREE_C]]
        ready = now + PF[p, P_CONNECT_S]
        CF[c, C_READY] = ready
        CF[c, C_DEADLINE] = ready
        CI[c, CI_POOL] = p
        CI[c, CI_ACTIVE] = 0
        CI[c, CI_NREL] = 0
        CI[c, CI_CLOSED] = 0
        CI[c, CI_REUSABLE] = reuse
        CI[c, CI_REFS] = 0
        tail = PI[p, PI_TAIL]
        CI[c, CI_PREV] = tail
        CI[c, CI_NEXT] = -1
        if tail >= 0:
            CI[tail, CI_NEXT] = c
        else:
            PI[p, PI_HEAD] = c
        PI[p, PI_TAIL] = c
        PI[p, PI_NCONNS] += 1
        if reuse:
            CF[c, C_DEADLINE] = ready + PF[p, P_IDLE]
            schedule_close(CF, CI, AI, KF, KI, a, c)
        return stream_on(CF, CI, PF, p, c, now), c
    return QUEUED, -1


@njit_inline
def earliest_release(CI, CR, PI, p, default):
    """The earliest known release of the pool's connections (``default`` if none)."""
    best = default
    found = False
    c = PI[p, PI_HEAD]
    while c >= 0:
        if CI[c, CI_NREL] > 0 and (not found or CR[c, 0] < best):
            best = CR[c, 0]
            found = True
        c = CI[c, CI_NEXT]
    return best, found


@njit_inline
def refresh_pool(CI, CR, PI, p, now):
    c = PI[p, PI_HEAD]
    while c >= 0:
        conn_refresh(CI, CR, c, now)
        c = CI[c, CI_NEXT]


# -- retry decisions: SF[s, S_*], SI[s, SI_*]; JU[s, :] the block of jitter uniforms ----
(S_DELAY, S_BASE, S_CAP, S_JITTER, S_RATIO, S_MIN_RETRIES, S_RATE, S_BURST, S_TOKENS,
 S_T, S_NF) = range(11)
(SI_KIND, SI_MAX_ATTEMPTS, SI_HAS_RATIO, SI_REQUESTS, SI_RETRIES, SI_REFUSALS, SI_JI,
 SI_PACED, SI_NI) = range(9)
KIND_NONE, KIND_FIXED, KIND_EXPONENTIAL, KIND_RETRY_AFTER, KIND_IMMEDIATE = range(5)
RETRY_KINDS = ("none", "fixed", "exponential", "retry-after", "immediate")
MAX_DOUBLINGS = 60


@njit_inline
def next_uniform(SI, JU, s):
    """The next draw of source ``s``'s jitter block (the caller keeps one in stock)."""
    i = SI[s, SI_JI]
    SI[s, SI_JI] = i + 1
    return JU[s, i]


@njit_inline
def backoff_s(SF, SI, JU, s, n, retry_after):
    """sim.policy.retry.backoff_s for source ``s``'s policy (``retry_after`` NaN: none)."""
    kind = SI[s, SI_KIND]
    if kind == KIND_RETRY_AFTER and retry_after == retry_after:
        return retry_after + SF[s, S_JITTER] * next_uniform(SI, JU, s)
    if kind == KIND_FIXED:
        return SF[s, S_DELAY]
    if kind == KIND_IMMEDIATE:
        return 0.0
    wait = SF[s, S_BASE] * 2.0 ** (n - 1 if n <= MAX_DOUBLINGS else MAX_DOUBLINGS)
    cap = SF[s, S_CAP]
    return next_uniform(SI, JU, s) * (wait if wait < cap else cap)


@njit_inline
def retry_delay(SF, SI, JU, s, attempt, retry_after):
    """RetryDecider.delay: seconds before attempt ``attempt + 1``, or -1.0 to give up."""
    if SI[s, SI_KIND] == KIND_NONE or attempt >= SI[s, SI_MAX_ATTEMPTS]:
        return -1.0
    if SI[s, SI_HAS_RATIO] and \
            SI[s, SI_RETRIES] >= SF[s, S_RATIO] * SI[s, SI_REQUESTS] + SF[s, S_MIN_RETRIES]:
        SI[s, SI_REFUSALS] += 1
        return -1.0
    SI[s, SI_RETRIES] += 1
    return backoff_s(SF, SI, JU, s, attempt, retry_after)


@njit_inline
def pace_delay(SF, s, now, cost):
    """TokenBucket.delay: take ``cost`` tokens at ``now``; the seconds to wait."""
    if cost <= 0.0:
        return 0.0
    tokens = SF[s, S_TOKENS] + (now - SF[s, S_T]) * SF[s, S_RATE]
    burst = SF[s, S_BURST]
    if not tokens < burst:
        tokens = burst
    tokens -= cost
    SF[s, S_TOKENS] = tokens
    SF[s, S_T] = now
    return 0.0 if tokens >= 0.0 else -tokens / SF[s, S_RATE]


# -- the loop's scalars: G[G_*] --------------------------------------------------------
# (the demand buffer's rows [G_FJ, G_J) are fed and wait for their first send)
(G_SEQ, G_EVN, G_AN, G_QN, G_J, G_BLEN, G_EXHAUSTED, G_NEXT_RID, G_NFREE_R, G_NFREE_C,
 G_NWAIT, G_JIT_LOW, G_FJ, G_CLOSED_RID, G_WORKER, G_NI) = range(16)
