""":class:`CompiledTierRun`: a tier's run on the compiled event loop (:mod:`.loop`).

It is a :class:`~sim.model.engine.TierRun` -- the same accounts, limiters, retry deciders,
pacers, client pools, admission tables and recorder, built by the same code -- whose
:meth:`run` copies that state into arrays once and lets the compiled loop play the
lifecycle. Python keeps what it does today: the demand is drawn by
:meth:`~sim.workload.demand.Plan.demand_blocks` and handed in block by block, each
source's retry jitter is drawn from its own stream in the same blocks of 4,096, and the
rows go through the recorder in chunks of :data:`~sim.model.recorder.CHUNK_ROWS`, so the
spools, aggregates and reports are those of the SimPy model.

Covered: open-loop sources (drawn or replayed from traces), closed-loop workers (their
requests and think times drawn by Python 256 at a time), every retry policy and the
retry budget, pacing, HTTP/2 and HTTP/1.1 pools with the account's connection cap and
open rate, several accounts, the fixed-window limiter with its alignments, refund rules
and daily allowance. Websockets: the model's session processes run by Python between the
loop's events, on the loop's limiter arrays, and billed publishing in the loop
(:mod:`sim.compiled.websockets`, :mod:`sim.compiled.sessions`,
:mod:`sim.compiled.publish`). Not covered: :func:`sim.compiled.choice.uncovered`.
"""

from __future__ import annotations

import numpy as np

from ..core.rng import stream
from ..core.vocabulary import CONN_430, HTTP_434, OK, OUTCOMES, WS_CU, Rng
from ..model import recorder as rc
from ..model.engine import (
    AccountResult,
    ConnectionsResult,
    TierResult,
    TierRun,
    tier_result,
)
from ..policy.limiter import CULimiter, WindowStats
from ..policy.retry import _BLOCK as JITTER_BLOCK
from . import loop as lp
from . import policies as po
from . import publish as pb
from .sessions import LoopWebsockets
from .websockets import ArrayLimiter, WebsocketSide

#: Requests a closed-loop worker draws at a time (TierRun._wake's chunk).
WORKER_CHUNK = 256
#: A worker's chunks double from :data:`WORKER_CHUNK` up to this many requests (fewer
#: Python refills of a busy worker; draws in pieces equal one draw, so the values are the
#: model's, which draws 256 at a time), within :data:`WORKER_CHUNK_CELLS` over all workers.
WORKER_CHUNK_MAX = 8192
WORKER_CHUNK_CELLS = 1 << 18
#: Demand rows handed to the loop at a time (at least; whole blocks of the plan's).
FEED_ROWS = 1 << 13


def _columns(fmt: rc.RowFormat, names: tuple[str, ...], rows: int) -> tuple:
    """The loop's row buffer of a table: a column per name, of the layout's types (the
    names checked against the layout, as the SimPy model binds its packers)."""
    fmt.packer(*names)
    return tuple(np.zeros(rows, dtype=dt) for _, dt in fmt.columns)


def _grow_rows(a: np.ndarray, rows: int, fill=0) -> np.ndarray:
    out = np.full((rows, *a.shape[1:]), fill, dtype=a.dtype)
    out[: len(a)] = a
    return out


def _worker_chunk_max(workers: int) -> int:
    """The largest chunk a worker draws: :data:`WORKER_CHUNK_MAX`, less when many workers
    would hold more than :data:`WORKER_CHUNK_CELLS` requests drawn ahead (a power of two,
    at least :data:`WORKER_CHUNK`)."""
    k = WORKER_CHUNK_MAX
    while k > WORKER_CHUNK and k * workers > WORKER_CHUNK_CELLS:
        k //= 2
    return k


def _grow_axis1(a: np.ndarray, cols: int, fill=0) -> np.ndarray:
    out = np.full((a.shape[0], cols, *a.shape[2:]), fill, dtype=a.dtype)
    out[:, : a.shape[1]] = a
    return out


class CompiledTierRun(TierRun):
    """:class:`~sim.model.engine.TierRun` whose :meth:`run` is the compiled loop's."""

    def run(self) -> TierResult:
        """Simulate until every request, retries included, has its final outcome."""
        self._build_state()
        s = self._s
        side = self._websocket_side()
        blocks = self.plan.demand_blocks()
        next_report = 0.0
        args = self._args()
        while True:
            code = lp.run_loop(*args)
            if code == lp.RC_DONE:
                break
            if code == lp.RC_FLUSH:
                self._move_rows(full_only=True)
            elif code == lp.RC_BLOCK:
                self._next_block(blocks)
                now = s["GF"][lp.GF_NOW]
                if self.progress and now >= next_report:
                    self.progress(now)
                    next_report = now + 60.0
            elif code == lp.RC_GROW:
                self._grow()
            elif code == lp.RC_JITTER:
                self._refill_jitter()
            elif code == lp.RC_WORKER:
                self._refill_worker(int(s["G"][po.G_WORKER]))
            elif code == lp.RC_WS:
                side.run_until_head()
            elif code == lp.RC_PUBLISH:
                side.finish_publish()
            elif code == lp.RC_TIMES:
                side.refill()
            if code == lp.RC_BLOCK or code == lp.RC_GROW or self._arrays_replaced:
                args = self._args()  # (arrays replaced: grown, or the next block)
        self._move_rows(full_only=False)
        self.rec.close(handshake_rid=int(s["G"][po.G_CLOSED_RID]))
        end_s = float(s["GF"][lp.GF_NOW])
        if side is not None:
            end_s = max(end_s, side.now)
        return self._result(end_s, side.result() if side is not None else None)

    def _websocket_side(self) -> WebsocketSide | None:
        """The websocket side (None without ``[[streams]]``), its processes started as
        TierRun.run starts them: after the feeder and the closed-loop workers."""
        if self.ws is None:
            return None
        s = self._s
        limiters = [ArrayLimiter(s, a, self._make_room) for a in range(len(self.accounts))]
        side = WebsocketSide(
            s, [a.admission for a in self.accounts], limiters,
            lambda env, admissions: self._websockets(env, admissions, LoopWebsockets),
            self._push_event, self._replaced)
        self.ws = side.ws
        side.start()
        return side

    def _replaced(self) -> None:
        self._arrays_replaced = True

    def _push_event(self, t: float, kind: int, obj: int) -> None:
        """Schedule a loop event from Python (the next seq), with room for it."""
        s = self._s
        if int(s["G"][po.G_EVN]) + 16 > len(s["EF"]):
            size = 2 * len(s["EF"])
            s["EF"], s["EI"] = _grow_rows(s["EF"], size), _grow_rows(s["EI"], size)
            self._arrays_replaced = True
        key = lp.NORMAL_KEY + int(s["G"][po.G_SEQ])
        lp.ev_push(s["EF"], s["EI"], s["G"], t, kind, obj)
        GF, GS = s["GF"], s["GS"]
        if t < GF[lp.GF_HEAD_T] or (t == GF[lp.GF_HEAD_T] and key < GS[lp.GS_HEAD_KEY]):
            # the loop's next event now: the websocket side stops before it
            GF[lp.GF_HEAD_T], GS[lp.GS_HEAD_KEY] = t, key

    def _make_room(self, now: float) -> None:
        """Room in the limiter arrays for a spend at ``now`` (a window and a day row)."""
        s = self._s
        if now >= s["GF"][lp.GF_DAY_LIMIT]:
            self._grow_days(now)
        if (s["LI"][:, po.LI_NWIN] + 2 > s["WF"].shape[1]).any():
            self._grow_windows()

    # -- state -----------------------------------------------------------------------

    def _build_state(self) -> None:
        sc, tab = self.plan.scenario, self.plan.tables
        n_src, n_reg = len(sc.sources), len(tab.regions)
        n_keys, n_methods = len(tab.keys), len(tab.methods)
        limiters = [a.limiter for a in self.accounts]
        for lim in limiters:
            if not isinstance(lim, CULimiter):
                raise RuntimeError(f"the compiled engine has no port of {type(lim).__name__}")
        lstates = [po.limiter_state_of(lim) for lim in limiters]
        LF, LI, WF, WI, DF, DI = (np.concatenate([st[i] for st in lstates])
                                  for i in range(6))
        # Connection accounts: the scenario's, then the one of no account (unlimited).
        conn_objs = [a.connections for a in self.accounts] + [self._no_account]
        n_ca = len(conn_objs)
        AF = np.zeros((n_ca, po.A_NF))
        AI = np.zeros((n_ca, po.AI_NI), dtype=np.int64)
        ring = 1
        for i, ac in enumerate(conn_objs):
            AF[i] = (ac.max_active, ac.max_opens_per_s)
            limited = not (ac.max_active == np.inf and ac.max_opens_per_s == np.inf)
            AI[i, po.AI_LIMITED] = limited
            if limited:
                ring = max(ring, int(ac.max_opens_per_s) + 1)
        OR = np.zeros((n_ca, n_reg, ring))
        OI = np.zeros((n_ca, n_reg, 2), dtype=np.int64)
        # Client pools, one per (source, region), as TierRun._pool makes them.
        n_pools = n_src * n_reg
        PF = np.zeros((n_pools, po.P_NF))
        PI = np.zeros((n_pools, po.PI_NI), dtype=np.int64)
        POOL_OF = np.zeros((n_src, n_reg), dtype=np.int64)
        max_streams = max_conns = 1
        for src in range(n_src):
            for reg in range(n_reg):
                pool = self._pool(src, reg)
                p = src * n_reg + reg
                POOL_OF[src, reg] = p
                PF[p] = (pool.connect_s, pool.idle_timeout_s, np.inf)
                PI[p, po.PI_ACCT] = next(i for i, ac in enumerate(conn_objs)
                                         if ac is pool.account)
                PI[p, po.PI_HOST] = reg
                PI[p, po.PI_MAX_STREAMS] = pool.max_streams
                PI[p, po.PI_MAX_CONNS] = pool.max_connections
                PI[p, po.PI_REUSE] = pool.reuse
                PI[p, [po.PI_HEAD, po.PI_TAIL, po.PI_WHEAD, po.PI_WTAIL]] = -1
                max_streams = max(max_streams, pool.max_streams)
                max_conns = max(max_conns, pool.max_connections)
        # Sources: retry deciders (with their jitter streams) and pacers.
        SF = np.zeros((n_src, po.S_NF))
        SI = np.zeros((n_src, po.SI_NI), dtype=np.int64)
        JU = np.zeros((n_src, JITTER_BLOCK))
        self._jitter_rngs = []
        for i, (dec, pacer) in enumerate(zip(self._deciders, self._pacers, strict=True)):
            p = dec.policy
            SI[i, po.SI_KIND] = po.RETRY_KINDS.index(p.policy)
            SI[i, po.SI_MAX_ATTEMPTS] = p.max_attempts
            SI[i, po.SI_HAS_RATIO] = p.budget_ratio is not None
            SF[i, [po.S_DELAY, po.S_BASE, po.S_CAP, po.S_JITTER]] = (
                p.delay_s, p.base_s, p.cap_s, p.jitter_s)
            SF[i, po.S_RATIO] = p.budget_ratio or 0.0
            SF[i, po.S_MIN_RETRIES] = p.budget_min_retries
            if pacer is not None:
                SI[i, po.SI_PACED] = 1
                SF[i, [po.S_RATE, po.S_BURST, po.S_TOKENS, po.S_T]] = (
                    pacer.rate, pacer.burst, pacer._tokens, pacer._t)
            self._jitter_rngs.append(dec._uniform._rng)
            SI[i, po.SI_JI] = JITTER_BLOCK  # drawn on first need
        RETRY_ON = np.zeros((n_src, len(OUTCOMES)), dtype=np.int8)
        for i, codes in enumerate(self._retry_codes):
            RETRY_ON[i, list(codes)] = 1
        GATE = np.full((n_src, n_keys, n_methods), -1, dtype=np.int64)
        for i in range(n_src):
            for k in range(n_keys):
                for m in range(n_methods):
                    g = self._gate[i][k][m]
                    if g.__class__ is int:
                        GATE[i, k, m] = g
        AFTER = np.array(self._after_limiter, dtype=np.int64).reshape(n_methods, 4)
        G = np.zeros(po.G_NI, dtype=np.int64)
        GF = np.zeros(lp.GF_NF)
        GS = np.zeros(lp.GS_NI, dtype=np.int64)
        GS[lp.GS_MAX_POOL_CONNS] = max_conns
        GS[[lp.GS_OK, lp.GS_430, lp.GS_434, lp.GS_WS_CU]] = (OK, CONN_430, HTTP_434, WS_CU)
        G[po.G_JIT_LOW] = 1  # draw each source's first jitter block before the first event
        workers = [(i, w) for i in self.plan.closed_sources
                   for w in range(sc.sources[i].workers.count)]
        n_req, n_conn, n_ev = 1024, 64, 1024 + len(workers)
        EF = np.zeros(n_ev)
        EI = np.zeros((n_ev, 3), dtype=np.int64)
        # The feeder's start (SimPy's Initialize): the first event, at time 0.
        lp.ev_push(EF, EI, G, 0.0, lp.EV_FEED, -1)
        # Closed-loop workers, as TierRun._start_worker starts them (in this order): each
        # wakes first at a draw of its think stream times the mean think time.
        WKF = np.zeros((len(workers), lp.WK_NF))
        WKI = np.zeros((len(workers), lp.WKI_NI), dtype=np.int64)
        self._workers = []
        self._chunk_max = _worker_chunk_max(len(workers))
        self._chunk = np.full(len(workers), WORKER_CHUNK, dtype=np.int64)
        for n, (i, w) in enumerate(workers):
            src = sc.sources[i]
            think_rng = stream(sc.seed, Rng.SOURCE, src.name, Rng.WORKER, w, Rng.THINK)
            region = tab.regions.index(sc.region_of(src))
            WKI[n] = (i, tab.keys.index(src.key), region, 0, 0)
            WKF[n, lp.WK_HALF] = self._half_rtt[region]
            self._workers.append((self.plan.drawer_for(i, w), think_rng, src.workers.think))
            lp.ev_push(EF, EI, G, 0.0 + think_rng.random() * src.workers.think.mean,
                       lp.EV_WORKER, n)
        G[po.G_CLOSED_RID] = self.plan.open_count
        chunk = self.rec.chunk_rows
        self._s = dict(
            G=G, GF=GF, GS=GS, EF=EF, EI=EI,
            RF=np.zeros((n_req, lp.R_NF)), RI=np.zeros((n_req, lp.RI_NI), dtype=np.int64),
            rfree=np.arange(n_req - 1, -1, -1, dtype=np.int64),
            CF=np.zeros((n_conn, po.C_NF)), CI=np.zeros((n_conn, po.CI_NI), dtype=np.int64),
            CR=np.zeros((n_conn, max_streams)),
            cfree=np.arange(n_conn - 1, -1, -1, dtype=np.int64),
            PF=PF, PI=PI, AF=AF, AI=AI,
            KF=np.zeros((n_ca, 64)), KI=np.zeros((n_ca, 64, 2), dtype=np.int64),
            OR=OR, OI=OI, LF=LF, LI=LI, WF=WF, WI=WI, DF=DF, DI=DI,
            SF=SF, SI=SI, JU=JU,
            DT=np.zeros(0), DX=np.zeros((0, lp.DX_NI), dtype=np.int64),
            DR=np.zeros((0, lp.DR_NF)),
            GATE=GATE, AFTER=AFTER, RETRY_ON=RETRY_ON,
            HALF=np.array(self._half_rtt, dtype=np.float64),
            KEY_ACCT=np.array(self._key_account, dtype=np.int64), POOL_OF=POOL_OF,
            AO=_columns(rc.ATTEMPT_ROW, lp.ATTEMPT_VALUES, chunk),
            QO=_columns(rc.REQUEST_ROW, lp.REQUEST_VALUES, chunk),
            WKF=WKF, WKI=WKI, WCM=np.zeros((len(workers), self._chunk_max), dtype=np.int64),
            WCF=np.zeros((len(workers), lp.WC_NF, self._chunk_max)),
            # billed websocket streams (sim.compiled.publish; set by the websocket side)
            PB=np.zeros((0, pb.PB_NI), dtype=np.int64), PC=np.zeros(0),
            PT=np.zeros((0, 1)), PL=np.zeros((0, 1), dtype=np.int64))
        GF[lp.GF_DURATION] = sc.duration_s
        GF[lp.GF_WS_T] = np.inf  # no websocket event (until the side posts one)
        G[po.G_NFREE_R], G[po.G_NFREE_C] = n_req, n_conn
        self._day_offset = float(sc.day_offset_s)
        self._set_day_limit()

    _ARGS = ("G", "GF", "GS", "EF", "EI", "RF", "RI", "rfree", "CF", "CI", "CR", "cfree",
             "PF", "PI", "AF", "AI", "KF", "KI", "OR", "OI", "LF", "LI", "WF", "WI", "DF",
             "DI", "SF", "SI", "JU", "DT", "DX", "DR", "GATE", "AFTER", "RETRY_ON", "HALF",
             "KEY_ACCT", "POOL_OF", "AO", "QO", "WKF", "WKI", "WCM", "WCF", "PB", "PC", "PT",
             "PL")

    def _args(self) -> list:
        self._arrays_replaced = False
        s = self._s
        return [s[name] for name in self._ARGS]

    def _set_day_limit(self) -> None:
        # An event at or after this time may need a day row the arrays lack (margin 1 s).
        cap = self._s["DF"].shape[1]
        self._s["GF"][lp.GF_DAY_LIMIT] = (cap - 1) * po.DAY_S - self._day_offset - 1.0

    def _grow(self) -> None:
        s, G = self._s, self._s["G"]
        left = int(G[po.G_BLEN] - G[po.G_FJ])
        need_ev = int(G[po.G_EVN]) + left + int(G[po.G_NWAIT]) + 8
        if need_ev > len(s["EF"]):
            size = 2 * need_ev
            s["EF"], s["EI"] = _grow_rows(s["EF"], size), _grow_rows(s["EI"], size)
        if G[po.G_NFREE_R] < left + 1:
            old = len(s["RF"])
            size = 2 * (old + left + 1)
            s["RF"], s["RI"] = _grow_rows(s["RF"], size), _grow_rows(s["RI"], size)
            s["rfree"] = self._more_free(s["rfree"], po.G_NFREE_R, old, size)
        if G[po.G_NFREE_C] < 1:
            old = len(s["CF"])
            size = 2 * old
            s["CF"], s["CI"], s["CR"] = (_grow_rows(s[k], size) for k in ("CF", "CI", "CR"))
            s["cfree"] = self._more_free(s["cfree"], po.G_NFREE_C, old, size)
        if s["EF"][0] >= s["GF"][lp.GF_DAY_LIMIT]:
            self._grow_days(s["EF"][0])
        most = int(s["GS"][lp.GS_MAX_POOL_CONNS])
        if (s["AI"][:, po.AI_NCLOSE] + most + 4 > s["KF"].shape[1]).any():
            size = 2 * (int(s["AI"][:, po.AI_NCLOSE].max()) + most + 4)
            s["KF"], s["KI"] = _grow_axis1(s["KF"], size), _grow_axis1(s["KI"], size)
        if (s["LI"][:, po.LI_NWIN] + 2 > s["WF"].shape[1]).any():
            self._grow_windows()

    def _grow_days(self, t: float) -> None:
        s = self._s
        self._arrays_replaced = True
        day = int((t + self._day_offset) // po.DAY_S)
        size = 2 * (day + 4)
        s["DF"] = _grow_axis1(s["DF"], size, np.nan)
        s["DF"][:, :, po.D_USED] = np.nan_to_num(s["DF"][:, :, po.D_USED])
        s["DI"] = _grow_axis1(s["DI"], size)
        self._set_day_limit()

    def _grow_windows(self) -> None:
        s = self._s
        self._arrays_replaced = True
        size = 2 * s["WF"].shape[1]
        s["WF"], s["WI"] = _grow_axis1(s["WF"], size), _grow_axis1(s["WI"], size)

    def _more_free(self, free: np.ndarray, counter: int, old: int, size: int) -> np.ndarray:
        G = self._s["G"]
        n = int(G[counter])
        out = np.zeros(size, dtype=np.int64)
        out[:n] = free[:n]
        out[n: n + size - old] = np.arange(size - 1, old - 1, -1)
        G[counter] = n + size - old
        return out

    def _refill_worker(self, n: int) -> None:
        """A worker's next chunk of requests and think times, from its own streams: the
        values TierRun._wake draws 256 at a time, drawn in chunks that double up to
        :func:`_worker_chunk_max` (draws in pieces equal one draw:
        tests/unit/workload/test_demand_slices.py)."""
        s = self._s
        drawer, think_rng, think = self._workers[n]
        k = int(self._chunk[n])
        self._chunk[n] = min(2 * k, self._chunk_max)
        method, _, reserve, actual, service = drawer.draw(k)
        s["WCM"][n, :k] = method
        s["WCF"][n, lp.WC_RESERVE, :k] = reserve
        s["WCF"][n, lp.WC_ACTUAL, :k] = actual
        s["WCF"][n, lp.WC_SERVICE, :k] = service
        s["WCF"][n, lp.WC_THINK, :k] = think.sample(think_rng, k)
        s["WKI"][n, lp.WKI_K], s["WKI"][n, lp.WKI_N] = 0, k

    def _refill_jitter(self) -> None:
        s = self._s
        for i, rng in enumerate(self._jitter_rngs):
            if s["SI"][i, po.SI_JI] == JITTER_BLOCK:
                # BlockDraws' block: rng.random(4096), the values RetryDecider draws
                s["JU"][i] = rng.random(JITTER_BLOCK)
                s["SI"][i, po.SI_JI] = 0
        s["G"][po.G_JIT_LOW] = 0

    def _next_block(self, blocks) -> None:
        """Append the next demand blocks, at least :data:`FEED_ROWS` rows unless the
        demand ends first, to the rows not yet started (or mark the end).

        Drawing ahead changes no value (the blocks are drawn in the same order from the
        same streams); it only spares the loop returns and this copy of the rows left."""
        s, G = self._s, self._s["G"]
        got, n = [], 0
        while n < FEED_ROWS:
            d = next(blocks, None)
            if d is None:
                break
            got.append(d)
            n += len(d)
        if not got:
            G[po.G_EXHAUSTED] = 1
            return
        fj, j, blen = int(G[po.G_FJ]), int(G[po.G_J]), int(G[po.G_BLEN])
        left = blen - fj
        DT = np.empty(left + n)
        DX = np.zeros((left + n, lp.DX_NI), dtype=np.int64)
        DR = np.zeros((left + n, lp.DR_NF))
        DT[:left], DX[:left], DR[:left] = s["DT"][fj:blen], s["DX"][fj:blen], s["DR"][fj:blen]
        at = left
        for d in got:
            e = at + len(d)
            DT[at:e] = d.t
            for col, values in enumerate((d.source, d.method, d.key, d.region)):
                DX[at:e, col] = values
            for col, values in enumerate((d.reserve, d.actual, d.service_s)):
                DR[at:e, col] = values
            at = e
        s["DT"], s["DX"], s["DR"] = DT, DX, DR
        G[po.G_FJ], G[po.G_J], G[po.G_BLEN] = 0, j - fj, left + n

    # -- rows ------------------------------------------------------------------------

    def _move_rows(self, *, full_only: bool) -> None:
        """Hand the loop's rows to the recorder (full chunks only, or all at the end)."""
        s, G = self._s, self._s["G"]
        for attempts, counter, fmt in ((True, po.G_AN, rc.ATTEMPT_ROW),
                                       (False, po.G_QN, rc.REQUEST_ROW)):
            n = int(G[counter])
            if n and (not full_only or n >= self.rec.chunk_rows):
                cols = s["AO" if attempts else "QO"]
                if attempts and n < self.rec.chunk_rows:
                    # The last attempts go to the recorder's buffer, where the handshake
                    # rows follow them (its close): the chunks are the SimPy model's.
                    rows = np.empty(n, dtype=fmt.dtype)
                    for name, col in zip(fmt.names, cols, strict=True):
                        rows[name] = col[:n]
                    self.rec.attempt_buf += rows.tobytes()
                elif n == len(cols[0]):
                    # A full buffer is handed over whole and the loop gets fresh ones (no
                    # copy; the loop's arguments are rebuilt before its next call).
                    self.rec.add_chunk(attempts, dict(zip(fmt.names, cols, strict=True)))
                    s["AO" if attempts else "QO"] = tuple(np.empty_like(col) for col in cols)
                    self._arrays_replaced = True
                else:
                    self.rec.add_chunk(attempts, {name: col[:n].copy()
                                                  for name, col in zip(fmt.names, cols,
                                                                       strict=True)})
                G[counter] = 0

    # -- the result ------------------------------------------------------------------

    def _result(self, end_s: float, websockets) -> TierResult:
        s = self._s
        accounts = []
        for a, acct in enumerate(self.accounts):
            nwin = int(s["LI"][a, po.LI_NWIN])
            wf, wi = s["WF"][a, :nwin], s["WI"][a, :nwin]
            windows = WindowStats(
                wf[:, po.W_START].tolist(), wf[:, po.W_RESERVED].tolist(),
                wf[:, po.W_SETTLED].tolist(), wf[:, po.W_PEAK].tolist(),
                wi[:, po.WI_ADMITTED].tolist(), wi[:, po.WI_THROTTLED].tolist(),
                wi[:, po.WI_PHANTOM].tolist())
            used = {int(d): float(s["DF"][a, d, po.D_USED])
                    for d in np.flatnonzero(s["DI"][a])}
            exhausted = {int(d): float(s["DF"][a, d, po.D_EXHAUSTED])
                         for d in np.flatnonzero(~np.isnan(s["DF"][a, :, po.D_EXHAUSTED]))}
            ai = s["AI"][a]
            lim = acct.limiter
            accounts.append(AccountResult(
                acct.name, acct.tier, windows, lim.budget_cu, used, exhausted,
                lim.daily_allowance_cu,
                ConnectionsResult(int(ai[po.AI_OPENED]), int(ai[po.AI_PEAK]),
                                  int(ai[po.AI_REFUSED]))))
        return tier_result(self.tier, self.rec, self.minutes, accounts,
                           self.accounts[0].limiter.window_s,
                           int(s["SI"][:, po.SI_REFUSALS].sum()), end_s, websockets)
