"""The compiled policy state machines (sim/compiled/policies.py) against the Python classes.

Random, time-ordered operation sequences drive a Python object (:class:`CULimiter`,
:class:`TokenBucket`, :class:`RetryDecider`, :class:`ClientPool` with its
:class:`AccountConnections`) and the array functions side by side; every answer must be
the same value (floats bit for bit), and so must the state both report at the end. Times
and costs are arbitrary floats (not a grid): the two must round alike, not only decide
alike. Each function runs compiled (as the engine calls it) and as plain Python
(``.py_func``), which must agree too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from sim.compiled import policies as po  # noqa: E402
from sim.config.scenario import RetryPolicy  # noqa: E402
from sim.model.environment import Environment  # noqa: E402
from sim.model.transport import ClientPool  # noqa: E402
from sim.policy.connections import AccountConnections  # noqa: E402
from sim.policy.limiter import CULimiter  # noqa: E402
from sim.policy.pacing import TokenBucket  # noqa: E402
from sim.policy.retry import RetryDecider  # noqa: E402

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

limiters = st.fixed_dictionaries({
    "budget": st.sampled_from([100.0, 250.5, 4000.0]),
    "alignment": st.sampled_from(["epoch", "first-hit", "utc"]),
    "refund_to": st.sampled_from(["origin-window", "current-window"]),
    "allowance": st.sampled_from([None, 300.0, 1000.25]),
    "day_offset": st.sampled_from([0.0, 86_390.0, 43_200.5]),
    "phase": st.sampled_from([0.0, 5.0, 11.999]),
})
steps = st.lists(st.tuples(
    st.floats(0.0, 30.0),  # time step
    st.sampled_from(["reserve", "settle", "retry_after"]),
    st.floats(0.0, 130.0),  # cost
    st.floats(0.0, 1.0),  # actual / cost
    st.integers(0, 1000)), min_size=1, max_size=80)


def _fns(compiled: bool):
    return (lambda f: f) if compiled else (lambda f: f.py_func)


@pytest.mark.parametrize("compiled", [True, False])
@SETTINGS
@given(cfg=limiters, ops=steps)
def test_limiter_same_answers(compiled, cfg, ops):
    fn = _fns(compiled)
    lim = CULimiter(cfg["budget"], alignment=cfg["alignment"], refund_to=cfg["refund_to"],
                    daily_allowance_cu=cfg["allowance"], day_offset_s=cfg["day_offset"],
                    phase_s=cfg["phase"] if cfg["alignment"] == "utc" else 0.0)
    LF, LI, WF, WI, DF, DI = po.limiter_state_of(lim, n_windows=256, n_days=8)
    now = 0.0
    booked = []  # (python reservation, window, day, cost, actual)
    for dt, op, cost, ratio, pick in ops:
        now += dt
        if op == "reserve":
            actual = round(cost * ratio, 6)
            got = lim.reserve(now, cost, actual)
            mine = fn(po.lim_reserve)(LF, LI, WF, WI, DF, DI, 0, now, cost, actual)
            assert mine == (int(got), got.window, got.day, got.phantom)
            if got == po.OK:
                booked.append((got, mine[1], mine[2], cost, actual))
        elif op == "settle" and booked:
            got, wid, day, cost, actual = booked.pop(pick % len(booked))
            lim.settle(now, got, cost, actual)
            fn(po.lim_settle)(LF, LI, WF, WI, DF, DI, 0, now, wid, day, cost, actual)
        else:
            assert fn(po.lim_retry_after)(LF, LI, 0, now) == lim.retry_after(now)
        assert LF[0, po.L_USED] == lim._used
    n = LI[0, po.LI_NWIN]
    stats = lim.window_stats()
    assert WF[0, :n, po.W_START].tolist() == stats.start_s
    assert WF[0, :n, po.W_RESERVED].tolist() == stats.reserved_cu
    assert WF[0, :n, po.W_SETTLED].tolist() == stats.settled_cu
    assert WF[0, :n, po.W_PEAK].tolist() == stats.peak_used_cu
    assert WI[0, :n].T.tolist() == [stats.admitted, stats.throttled, stats.phantom]
    assert {d: DF[0, d, po.D_USED] for d in np.flatnonzero(DI[0])} == lim.daily_used
    exhausted = DF[0, :, po.D_EXHAUSTED]
    assert {d: exhausted[d] for d in np.flatnonzero(~np.isnan(exhausted))} == \
        lim.daily_exhausted_at


@pytest.mark.parametrize("compiled", [True, False])
@SETTINGS
@given(rate=st.floats(0.1, 100.0), burst=st.floats(0.0, 500.0),
       ops=st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 80.0)), max_size=60))
def test_pacing_same_delays(compiled, rate, burst, ops):
    bucket = TokenBucket(rate, burst)
    SF = np.zeros((1, po.S_NF))
    SF[0, [po.S_RATE, po.S_BURST, po.S_TOKENS, po.S_T]] = (bucket.rate, bucket.burst,
                                                           bucket._tokens, bucket._t)
    now = 0.0
    for dt, cost in ops:
        now += dt
        assert _fns(compiled)(po.pace_delay)(SF, 0, now, cost) == bucket.delay(now, cost)


retry_policies = st.builds(
    RetryPolicy, policy=st.sampled_from(["none", "fixed", "exponential", "retry-after"]),
    max_attempts=st.integers(1, 6), delay_s=st.floats(0.0, 3.0), base_s=st.floats(0.0, 2.0),
    cap_s=st.floats(0.0, 40.0), jitter_s=st.floats(0.0, 2.0),
    budget_ratio=st.none() | st.floats(0.0, 0.5), budget_min_retries=st.integers(0, 5))


@pytest.mark.parametrize("compiled", [True, False])
@SETTINGS
@given(policy=retry_policies, seed=st.integers(0, 2**32 - 1),
       ops=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 7),
                              st.sampled_from([math.nan, 1.0, 11.0])), max_size=60))
def test_retry_same_delays(compiled, policy, seed, ops):
    from sim.policy.retry import _BLOCK

    decider = RetryDecider(policy, np.random.default_rng(seed))
    SF = np.zeros((1, po.S_NF))
    SI = np.zeros((1, po.SI_NI), dtype=np.int64)
    SI[0, po.SI_KIND] = po.RETRY_KINDS.index(policy.policy)
    SI[0, po.SI_MAX_ATTEMPTS] = policy.max_attempts
    SI[0, po.SI_HAS_RATIO] = policy.budget_ratio is not None
    SF[0, [po.S_DELAY, po.S_BASE, po.S_CAP, po.S_JITTER, po.S_RATIO, po.S_MIN_RETRIES]] = (
        policy.delay_s, policy.base_s, policy.cap_s, policy.jitter_s,
        policy.budget_ratio or 0.0, policy.budget_min_retries)
    JU = np.random.default_rng(seed).random(_BLOCK)[None, :]
    for new_requests, attempt, retry_after in ops:
        decider.on_request(new_requests)
        SI[0, po.SI_REQUESTS] += new_requests
        want = decider.delay(attempt, None if math.isnan(retry_after) else retry_after)
        got = _fns(compiled)(po.retry_delay)(SF, SI, JU, 0, attempt, retry_after)
        assert got == (-1.0 if want is None else want)
    assert SI[0, po.SI_REFUSALS] == decider.budget_refusals


def _pool_arrays(pool: ClientPool, account: AccountConnections, max_streams: int):
    """The state arrays of one pool on one account (connection rows 0..63)."""
    n = 64
    limited = account.max_active != math.inf
    s = dict(
        CF=np.zeros((n, po.C_NF)), CI=np.zeros((n, po.CI_NI), dtype=np.int64),
        CR=np.zeros((n, max_streams)), PF=np.array([[pool.connect_s, pool.idle_timeout_s,
                                                      math.inf]]),
        PI=np.zeros((1, po.PI_NI), dtype=np.int64),
        AF=np.array([[account.max_active, account.max_opens_per_s]]),
        AI=np.zeros((1, po.AI_NI), dtype=np.int64),
        KF=np.zeros((1, 4 * n)), KI=np.zeros((1, 4 * n, 2), dtype=np.int64),
        OR=np.zeros((1, 1, int(account.max_opens_per_s) + 1 if limited else 1)),
        OI=np.zeros((1, 1, 2), dtype=np.int64), G=np.zeros(po.G_NI, dtype=np.int64),
        cfree=np.arange(n - 1, -1, -1, dtype=np.int64))
    s["AI"][0, po.AI_LIMITED] = limited
    s["G"][po.G_NFREE_C] = n
    PI = s["PI"]
    PI[0, po.PI_MAX_STREAMS], PI[0, po.PI_MAX_CONNS] = pool.max_streams, pool.max_connections
    PI[0, po.PI_REUSE] = pool.reuse
    PI[0, [po.PI_HEAD, po.PI_TAIL, po.PI_WHEAD, po.PI_WTAIL]] = -1
    return s


pools = st.fixed_dictionaries({
    "max_streams": st.integers(1, 4), "max_connections": st.integers(1, 4),
    # (not idle 0: a connection in service past a zero idle timeout is re-queued for
    # closing at `now` forever, in AccountConnections as here -- a hang of both engines)
    "connect_rtts": st.sampled_from([0.0, 2.0]), "idle": st.sampled_from([0.3, 5.0]),
    "reuse": st.booleans(), "max_active": st.sampled_from([2, 3, math.inf]),
    "opens": st.sampled_from([1, 2, 32])})


@pytest.mark.parametrize("compiled", [True, False])
@SETTINGS
@given(cfg=pools, ops=st.lists(st.tuples(st.floats(0.0, 1.5), st.floats(0.0, 3.0),
                                         st.booleans()), min_size=1, max_size=60))
def test_pool_same_streams_and_closes(compiled, cfg, ops):
    """acquire and release_at (replies known at once, or later): the same send times, the
    same connection (by order of opening), the same 430s and account figures."""
    fn = _fns(compiled)
    limits = ((cfg["max_active"], cfg["opens"]) if cfg["max_active"] != math.inf
              else (math.inf, math.inf))
    account = AccountConnections(*limits)
    pool = ClientPool(account, "h", Environment(), rtt_s=0.05,
                      max_streams=cfg["max_streams"], max_connections=cfg["max_connections"],
                      connect_rtts=cfg["connect_rtts"], idle_timeout_s=cfg["idle"],
                      reuse=cfg["reuse"], on_ready=None)
    s = _pool_arrays(pool, account, cfg["max_streams"])
    args = [s[k] for k in ("CF", "CI", "CR", "PF", "PI", "AF", "AI", "KF", "KI", "OR",
                           "OI", "G", "cfree")]
    py_order: dict[int, int] = {}  # id(Connection) -> order opened
    opened = []  # every Connection, kept alive (an id is unique only while it lives)
    row_order: dict[int, int] = {}  # current array row -> order opened
    pending = []  # (python conn, row) of replies not yet known
    now = 0.0
    for dt, service, later in ops:
        now += dt
        opened_before = s["AI"][0, po.AI_OPENED]
        start, conn = pool.acquire(now)
        got_start, row = fn(po.pool_acquire)(*args, 0, now)
        if s["AI"][0, po.AI_OPENED] > opened_before:  # a new connection (a row reused)
            row_order[row] = opened_before
        if conn is not None and id(conn) not in py_order:
            py_order[id(conn)] = len(py_order)
            opened.append(conn)
        assert got_start == start
        if start < 0:
            assert row == -1
            continue
        assert row_order[row] == py_order[id(conn)]
        if later:
            pending.append((conn, row, start + service))
        else:
            conn.release_at(start + service)
            _release(fn, s, row, start + service)
        if pending and not later:  # a reply of an earlier request becomes known
            pconn, prow, t = pending.pop(0)
            pconn.release_at(max(t, now))
            _release(fn, s, prow, max(t, now))
        assert s["AI"][0, po.AI_ACTIVE] == account.active
        assert s["PI"][0, po.PI_NCONNS] == len(pool.conns)
    ai = s["AI"][0]
    assert (ai[po.AI_OPENED], ai[po.AI_PEAK], ai[po.AI_REFUSED]) == (
        account.opened, account.peak_active, account.refused)


def _release(fn, s, row, t):
    """Connection.release_at without a waiting queue (as the loop's _release_at)."""
    CI = s["CI"]
    CI[row, po.CI_NREL] = fn(po.fheap_push)(s["CR"][row], CI[row, po.CI_NREL], t)
    if not CI[row, po.CI_REUSABLE]:
        s["CF"][row, po.C_DEADLINE] = t
        fn(po.schedule_close)(s["CF"], CI, s["AI"], s["KF"], s["KI"], 0, row)
