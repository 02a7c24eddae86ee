"""One tier's run: a SimPy environment replaying the plan's demand against the service.

The life of an attempt (times in simulated seconds)::

    client sends at t: a stream on an HTTP/2 connection of its pool (now, after a new
        connection opens, or after queueing; 430 if the account refuses the connection)
    ──rtt/2──► service admits or refuses
        admitted: reserve CU ──service time──► settle, reply ──rtt/2──► client
        refused:  reply (434 / -32005 / 402 / 401 / 421 / oversized) ──rtt/2──► client
    client: done, or wait per its retry policy and send attempt n+1

Send, admission and completion are SimPy events with one callback each, three per
admitted attempt: the :class:`Request` itself is the event, put back on the queue with
``env.schedule`` for its next step. Closed-loop workers are events too (``_Worker``): a
request's final outcome schedules its worker's next send. The open-loop feeder is a
process that wakes once per ``FEED_HORIZON_S`` and schedules the sends of that slice, so
no event exists per request long before its time.

The service decides in :data:`sim.policy.admission.ORDER`'s order, tabulated once per run
(``_gate``, ``_after_limiter``). The same model written plainly -- a SimPy process per
open-loop request or closed-loop worker, no heap pushes or tables -- is
``tests/helpers/reference_engine.py``, and ``tests/validation/test_reference_engine.py``
holds the two to the same attempts (websockets apart).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from heapq import heappush

import numpy as np
from simpy.events import NORMAL, Event

from ..config.tiers import APIS, RPC, Tier
from ..core.rng import stream
from ..core.vocabulary import Rng
from ..policy.admission import ORDER, Admission
from ..policy.connections import AccountConnections
from ..policy.limiter import OK as LIM_OK
from ..policy.limiter import WindowStats
from ..policy.limiters import Limiter
from ..policy.pacing import TokenBucket
from ..policy.retry import RetryDecider
from ..workload.demand import Plan
from . import recorder as rc
from .accounts import AccountPolicies, build_accounts
from .aggregates import MinuteOutcomes
from .environment import Environment
from .transport import QUEUED, REFUSED, ClientPool
from .websockets.records import RecorderHandshakes, WebsocketsResult
from .websockets.sessions import Websockets

FEED_HORIZON_S = 1.0
_NAN = math.nan
# The values the hot paths pack into a row, in their order (``_complete``, ``_refused``),
# by the recorder's column names: binding the packers checks them against its layout.
_ATTEMPT_VALUES = ("request_id", "attempt", "source", "method", "key", "region", "t_send",
                   "t_end", "outcome", "cu_reserved", "cu_settled", "retry_after_s",
                   "phantom", "stream_wait_s")
_REQUEST_VALUES = ("request_id", "source", "method", "key", "t_first", "t_end", "outcome",
                   "attempts")


class Request(Event):
    """A logical request in flight (mutable: the attempt number and times change), and
    the SimPy event of its next step.

    A request waits for one thing at a time (its send, its arrival at the service, its
    completion), so it is its own event: each step sets ``callbacks`` to the handler of
    the next (a constant tuple; SimPy only iterates it) and puts the request back on the
    environment's queue with ``env.schedule`` -- no Timeout object, callback list or
    ``.value`` lookup per step.
    """

    __slots__ = ("callbacks", "rid", "source", "method", "key", "region", "reserve", "actual",
                 "service_s", "t_first", "t_send", "attempt", "booked", "lim", "half_rtt",
                 "worker", "conn", "wait")
    _ok = True  # SimPy's step() reads it after the callbacks: a step never fails

    def __init__(self, rid, source, method, key, region, reserve, actual, service_s,
                 t_first, half_rtt, worker=None):
        self.rid, self.source, self.method, self.key, self.region = rid, source, method, key, region
        self.reserve, self.actual, self.service_s = reserve, actual, service_s
        self.t_first = self.t_send = t_first
        self.attempt = 1
        self.half_rtt = half_rtt
        self.worker = worker  # the closed-loop worker waiting for the final outcome
        # Set before they are read: ``conn`` and ``wait`` (the stream and the wait for it)
        # at each send, ``booked`` and ``lim`` (the Reservation and its limiter) on admission.


class _Worker(Event):
    """A closed-loop worker between requests: the event of its next send."""

    __slots__ = ("callbacks", "src", "drawer", "think_rng", "think", "cols", "k", "key",
                 "region", "h", "decider", "pause")
    _ok = True


@dataclass(frozen=True)
class ConnectionsResult:
    """An account's HTTP/2 connections (spec 8.4): opened, the most active at once, and
    opens refused with 430. A tier's figure adds the accounts up (the peak: the largest)."""

    opened: int = 0
    peak_active: int = 0
    refused_430: int = 0

    @classmethod
    def combined(cls, parts: list[ConnectionsResult]) -> ConnectionsResult:
        """Several accounts' figures as one."""
        return cls(sum(p.opened for p in parts), max((p.peak_active for p in parts), default=0),
                   sum(p.refused_430 for p in parts))


@dataclass
class TierResult:
    """What one tier's run produced (columnar), before metrics are computed.

    The attempt and request rows live in their sinks (in memory, or a Parquet spool
    file); :attr:`attempts` and :attr:`requests` read them whole; websocket handshakes
    are attempt rows too. ``minutes`` and ``refused_handshakes`` are the running
    aggregates the plots use (:class:`~sim.model.aggregates.MinuteOutcomes`).
    ``connections``: the HTTP/2 connections of all accounts; ``websockets``: the
    websocket side (None for a scenario without ``[[streams]]``).
    """

    tier: Tier
    attempt_sink: rc.MemorySink | rc.ParquetSink
    request_sink: rc.MemorySink | rc.ParquetSink
    minutes: dict[str, np.ndarray]
    refused_handshakes: dict[str, np.ndarray]
    windows: WindowStats
    window_s: float
    budget_cu: float
    daily_used: dict[int, float]
    daily_exhausted_at: dict[int, float]
    daily_allowance_cu: float | None
    retry_budget_refusals: int
    end_s: float
    connections: ConnectionsResult = field(default_factory=ConnectionsResult)
    websockets: WebsocketsResult | None = None
    accounts: list[AccountResult] = field(default_factory=list)

    @property
    def attempts(self) -> dict[str, np.ndarray]:
        """Every attempt row, as typed numpy columns."""
        return self.attempt_sink.read()

    @property
    def requests(self) -> dict[str, np.ndarray]:
        """Every logical request row, as typed numpy columns."""
        return self.request_sink.read()


@dataclass
class AccountResult:
    """One account's limiter and connection figures (the tier-level ones add them up)."""

    name: str
    tier: Tier
    windows: WindowStats
    budget_cu: float
    daily_used: dict[int, float]
    daily_exhausted_at: dict[int, float]
    daily_allowance_cu: float | None
    connections: ConnectionsResult


def combined_windows(stats: list[WindowStats]) -> WindowStats:
    """Several accounts' windows as one table: columns summed over windows that start at
    the same time (all of them under ``epoch`` alignment), rows in start order."""
    if len(stats) == 1:
        return stats[0]
    rows: dict[float, list] = {}
    for w in stats:
        for i, start in enumerate(w.start_s):
            row = rows.setdefault(start, [0.0, 0.0, 0.0, 0, 0, 0])
            for j, col in enumerate((w.reserved_cu, w.settled_cu, w.peak_used_cu, w.admitted,
                                     w.throttled, w.phantom)):
                row[j] += col[i]
    starts = sorted(rows)
    cols = list(zip(*(rows[t] for t in starts), strict=True)) if starts else [()] * 6
    return WindowStats(starts, *(list(c) for c in cols))


def _sum_daily(dicts: list[dict[int, float]]) -> dict[int, float]:
    if len(dicts) == 1:
        return dict(dicts[0])
    out: dict[int, float] = {}
    for d in dicts:
        for day, v in d.items():
            out[day] = out.get(day, 0.0) + v
    return out


def _earliest(dicts: list[dict[int, float]]) -> dict[int, float]:
    out: dict[int, float] = {}
    for d in dicts:
        for day, t in d.items():
            out[day] = min(t, out.get(day, t))
    return out


def tier_result(tier: Tier, rec, minutes, accounts: list[AccountResult], window_s: float,
                retry_budget_refusals: int, end_s: float, websockets=None) -> TierResult:
    """A tier's :class:`TierResult` from its accounts' results (one home for both
    engines: the windows, budgets, daily ledgers and connections combined over accounts),
    the recorder ``rec`` and the per-minute table ``minutes``."""
    allowances = [a.daily_allowance_cu for a in accounts]
    return TierResult(
        tier=tier, attempt_sink=rec.attempt_sink, request_sink=rec.request_sink,
        minutes=minutes.table(), refused_handshakes=minutes.refused_handshakes(),
        windows=combined_windows([a.windows for a in accounts]), window_s=window_s,
        budget_cu=sum(a.budget_cu for a in accounts),
        daily_used=_sum_daily([a.daily_used for a in accounts]),
        daily_exhausted_at=_earliest([a.daily_exhausted_at for a in accounts]),
        daily_allowance_cu=None if None in allowances else sum(allowances),
        retry_budget_refusals=retry_budget_refusals, end_s=end_s,
        connections=ConnectionsResult.combined([a.connections for a in accounts]),
        websockets=websockets, accounts=accounts)


class TierRun:
    """Build the model for ``tier`` from ``plan``, then :meth:`run` it once."""

    def __init__(self, plan: Plan, tier: Tier,
                 progress: Callable[[float], None] | None = None,
                 spool: str | None = None) -> None:
        sc = plan.scenario
        self.plan, self.tier, self.progress = plan, tier, progress
        self.env = Environment()
        self.accounts: list[AccountPolicies] = build_accounts(plan, tier)
        # ``spool``: a path prefix for Parquet spool files; rows then leave memory in chunks.
        sinks = ((rc.ParquetSink(rc.ATTEMPT_COLUMNS, f"{spool}-attempts.parquet"),
                  rc.ParquetSink(rc.REQUEST_COLUMNS, f"{spool}-requests.parquet"))
                 if spool else (None, None))
        self.minutes = MinuteOutcomes()
        self.rec = rc.Recorder(*sinks, on_chunk=self.minutes)
        t = plan.tables
        self._key_account = t.key_account.tolist()
        self._method_needs_h2 = [ORDER.needs_h2(m, APIS[a])
                                 for m, a in zip(t.methods, t.method_api, strict=True)]
        # The admission order's step 5 as a table: limiter status -> outcome, per method.
        by_rpc = {rpc: ORDER.http_limiter_table(rpc=rpc) for rpc in (False, True)}
        self._after_limiter = [by_rpc[APIS[a] == RPC] for a in t.method_api]
        self._half_rtt = (t.region_rtt_s / 2).tolist()
        self._deciders, self._retry_codes, self._h2_ok = [], [], []
        self._pacers: list[TokenBucket | None] = []
        for src in sc.sources:
            client = sc.clients[src.client]
            p = client.pacing
            self._pacers.append(TokenBucket(p.rate_cu_per_s, p.burst_cu) if p else None)
            self._deciders.append(
                RetryDecider(client.retry, stream(sc.seed, Rng.SOURCE, src.name, Rng.RETRY)))
            self._retry_codes.append(frozenset(rc.OUTCOMES.index(o) for o in client.retry.retry_on
                                               if o in rc.OUTCOMES))
            self._h2_ok.append(client.http_version == "2" and client.sni)
        self._next_rid = plan.open_count
        # A source's connections count against its key's account; a key of no account
        # presents no valid key, so its connections belong to none (spec 8.4's limits are
        # per account): nothing refuses or counts them, and its requests get 401.
        self._source_account = [self._key_account[t.keys.index(src.key)]
                                for src in sc.sources]
        self._no_account = AccountConnections.unlimited()
        self._pool_of: list[list[ClientPool | None]] = [[None] * len(t.regions)
                                                        for _ in sc.sources]
        self._gate = [[[self._admission(s, k, m) for m in range(len(t.methods))]
                       for k in range(len(t.keys))] for s in range(len(sc.sources))]
        self._window_retry_after = ORDER.WINDOW_RETRY_AFTER
        self._duration_s = sc.duration_s
        self._schedule = self.env.schedule
        # The hot paths push onto SimPy's event heap what ``env.schedule(event, NORMAL,
        # delay)`` would -- ``(now + delay, NORMAL, next id, event)`` -- without the call.
        self._queue, self._eid = self.env._queue, self.env._eid
        # Each step's handler, as the constant callbacks of a request's next event.
        self._to_first, self._to_send = (self._first_send,), (self._send_event,)
        self._to_paced = (self._paced_event,)
        self._to_arrive, self._to_complete = (self._arrive,), (self._complete,)
        self._to_430, self._to_wake = (self._refused_430,), (self._wake,)
        # The recorder's row buffers and packers, bound once (it empties the buffers in
        # place): an attempt or request row is one ``buf += pack(...)``.
        self._abuf, self._qbuf = self.rec.attempt_buf, self.rec.request_buf
        self._apack = rc.ATTEMPT_ROW.packer(*_ATTEMPT_VALUES)
        self._qpack = rc.REQUEST_ROW.packer(*_REQUEST_VALUES)
        self._abytes, self._qbytes = self.rec.attempt_chunk_bytes, self.rec.request_chunk_bytes
        self.ws = (self._websockets(self.env, [a.admission for a in self.accounts])
                   if sc.streams else None)

    def _websockets(self, env, admissions: list[Admission], cls=Websockets) -> Websockets:
        """The websocket side of the run on ``env``, one :class:`Admission` per account
        (the compiled engine passes its own environment, admissions over its limiter
        state and class); handshakes go to the attempt recorder."""
        sc, t = self.plan.scenario, self.plan.tables
        a0 = self.accounts[0]
        # A handshake is an attempt row of source ``len(sources) + client``, its method
        # the stream's name.
        rows = [(len(sc.sources) + i, t.methods.index(c.stream), t.keys.index(c.key),
                 t.regions.index(c.region or sc.regions[0].name))
                for i, c in enumerate(sc.streams)]
        return cls(
            env, admissions[0].limiter, a0.tier, list(sc.streams), sc.ws,
            self.plan.loaded.pricing, key_valid=None, seed=sc.seed,
            duration_s=sc.duration_s, day_offset_s=sc.day_offset_s, admissions=admissions,
            client_account=[self._key_account[t.keys.index(c.key)] for c in sc.streams],
            handshakes=RecorderHandshakes(self.rec, rows, a0.admission.connect_cu))

    def _admission(self, source: int, key: int, method: int) -> int | Limiter:
        """What the service does with an attempt before its limiter (:data:`ORDER`'s steps
        2-4), which depends only on (source, key, method): refuse it with an outcome
        code, or ask this limiter."""
        acct = self._key_account[key]
        refused = ORDER.http_before_limiter(
            needs_h2=self._method_needs_h2[method], h2_sni=self._h2_ok[source],
            key_ok=acct >= 0, api_in_tier=acct >= 0 and self.accounts[acct].method_in_tier[method])
        return self.accounts[acct].limiter if refused is None else refused

    # -- the run ---------------------------------------------------------------------

    def run(self) -> TierResult:
        """Simulate until every request, retries included, has its final outcome."""
        env = self.env
        env.process(self._feed())
        sc = self.plan.scenario
        for i in self.plan.closed_sources:
            for w in range(sc.sources[i].workers.count):
                self._start_worker(i, w)
        if self.ws is not None:
            self.ws.start()
        env.run()
        ws = self.ws.result() if self.ws is not None else None
        self.rec.close(handshake_rid=self._next_rid)
        accounts = [AccountResult(
            a.name, a.tier, a.limiter.window_stats(), a.limiter.budget_cu,
            dict(a.limiter.daily_used), dict(a.limiter.daily_exhausted_at),
            a.limiter.daily_allowance_cu,
            ConnectionsResult(a.connections.opened, a.connections.peak_active,
                              a.connections.refused)) for a in self.accounts]
        return tier_result(self.tier, self.rec, self.minutes, accounts,
                           self.accounts[0].limiter.window_s,
                           sum(d.budget_refusals for d in self._deciders), env.now, ws)

    def _feed(self):
        """Open loop: schedule each slice's arrivals; requests never wait for replies."""
        env = self.env
        half_rtt = self._half_rtt
        # A request counts for its source's retry budget when it is sent, not here (up to
        # FEED_HORIZON_S ahead): the budget is over the requests sent so far.
        queue, eid, push, to_first = self._queue, self._eid, heappush, self._to_first
        blocks = self.plan.demand_blocks()
        i, next_report = 0, 0.0
        j = blen = 0
        more = True
        while more:
            now = env.now
            until = now + FEED_HORIZON_S
            while True:
                if j == blen:
                    # Python values for the next block only: memory stays flat in run length.
                    d = next(blocks, None)
                    if d is None:
                        more = False
                        break
                    t, source, method, key, region, reserve, actual, service = (
                        c.tolist() for c in (d.t, d.source, d.method, d.key, d.region,
                                             d.reserve, d.actual, d.service_s))
                    j, blen = 0, len(t)
                tj = t[j]
                if tj >= until:
                    break
                s, reg = source[j], region[j]
                r = Request(i, s, method[j], key[j], reg, reserve[j], actual[j], service[j], tj,
                            half_rtt[reg])
                r.callbacks = to_first
                push(queue, (now + (tj - now), NORMAL, next(eid), r))
                i += 1
                j += 1
            if self.progress and env.now >= next_report:
                self.progress(env.now)
                next_report = env.now + 60.0
            if more:
                yield env.timeout(max(until, math.floor(t[j])) - env.now)

    def _start_worker(self, src_idx: int, worker: int) -> None:
        """Closed loop: send, wait for the final outcome, think, repeat until the end.

        The worker is an event, not a process: it wakes to send (:meth:`_wake`), and the
        request's final outcome schedules its next wake (rtt/2 plus a think time later).
        """
        sc = self.plan.scenario
        src = sc.sources[src_idx]
        tab = self.plan.tables
        w = _Worker(self.env)
        w.src = src_idx
        w.drawer = self.plan.drawer_for(src_idx, worker)
        w.think_rng = stream(sc.seed, Rng.SOURCE, src.name, Rng.WORKER, worker, Rng.THINK)
        w.key = tab.keys.index(src.key)
        w.region = tab.regions.index(sc.region_of(src))
        w.h = self._half_rtt[w.region]
        w.decider = self._deciders[src_idx]
        w.k, w.cols, w.think = 0, None, None
        # Workers start spread over one think time, not all at t = 0.
        w.callbacks = self._to_wake
        self._schedule(w, NORMAL, w.think_rng.random() * src.workers.think.mean)

    def _wake(self, w: _Worker) -> None:
        """A worker's think time is over: it sends its next request, if the run is on."""
        now = self.env._now
        if now >= self._duration_s:
            return
        k = w.k
        if w.cols is None or k == len(w.cols[0]):
            # Think times are drawn chunk by chunk from the worker's own stream, so
            # the k-th pause is the same on every tier and no value ever recurs.
            w.cols, k = [c.tolist() for c in w.drawer.draw(256)], 0
            w.think = self.plan.scenario.sources[w.src].workers.think.sample(
                w.think_rng, 256).tolist()
        cols = w.cols
        r = Request(self._next_rid, w.src, cols[0][k], w.key, w.region, cols[2][k],
                    cols[3][k], cols[4][k], now, w.h, w)
        self._next_rid += 1
        w.decider.on_request()
        w.pause = w.think[k]
        w.k = k + 1
        self._send_event(r)

    def _finished(self, r: Request) -> None:
        """A logical request has its final outcome: its worker (if any) thinks, then wakes."""
        w = r.worker
        w.callbacks = self._to_wake
        heappush(self._queue, (self.env._now + (w.h + w.pause), NORMAL, next(self._eid), w))

    # -- the client's transport ------------------------------------------------------

    def _pool(self, source: int, region: int) -> ClientPool:
        """The client pool of ``source`` to ``region``'s hostname, made on first use."""
        pool = self._pool_of[source][region]
        if pool is None:
            sc, tab = self.plan.scenario, self.plan.tables
            client = sc.clients[sc.sources[source].client]
            http = client.http
            acct = self._source_account[source]
            pool = ClientPool(
                self.accounts[acct].connections if acct >= 0 else self._no_account,
                tab.regions[region], self.env,
                rtt_s=2 * self._half_rtt[region],
                max_streams=http.max_streams_per_conn if client.http_version == "2" else 1,
                max_connections=http.max_connections, connect_rtts=http.connect_rtts,
                idle_timeout_s=http.idle_timeout_s, reuse=http.reuse, on_ready=self._on_stream)
            self._pool_of[source][region] = pool
        return pool

    def _first_send(self, r: Request) -> None:
        """An open-loop request's first attempt: it counts for its source's retry budget
        now, as it is sent, then goes as every attempt does (:meth:`_send_event`)."""
        self._deciders[r.source].on_request()
        self._send_event(r)

    def _send_event(self, r: Request) -> None:
        """The client sends an attempt: pace it, get a stream, then it travels rtt/2."""
        now = self.env._now
        pacer = self._pacers[r.source]
        if pacer is not None:
            wait = pacer.delay(now, r.reserve)
            if wait > 0.0:
                r.callbacks = self._to_paced
                self._schedule(r, NORMAL, wait)
                return
        self._transmit(r, now)

    def _paced_event(self, r: Request) -> None:
        """A paced attempt's turn: get a stream (as :meth:`_send_event` does)."""
        self._transmit(r, self.env._now)

    def _transmit(self, r: Request, now: float) -> None:
        """Get a stream and travel rtt/2; or wait in the pool's queue, or fail with 430."""
        pool = self._pool_of[r.source][r.region] or self._pool(r.source, r.region)
        start, conn = pool.acquire(now)
        if start >= 0.0:
            r.conn, r.wait = conn, start - now
            r.callbacks = self._to_arrive
            heappush(self._queue, (now + (start - now + r.half_rtt), NORMAL, next(self._eid), r))
        elif start == QUEUED:
            pool.enqueue(r, now)
        else:
            assert start == REFUSED
            r.conn, r.wait = None, 0.0
            r.callbacks = self._to_430
            self._schedule(r, NORMAL, r.half_rtt)

    def _on_stream(self, r: Request, start: float, conn, since: float) -> None:
        r.conn, r.wait = conn, start - since
        r.callbacks = self._to_arrive
        self._schedule(r, NORMAL, start - self.env._now + r.half_rtt)

    def _refused_430(self, r: Request) -> None:
        self._refused(r, self.env._now, rc.CONN_430, _NAN, False)

    # -- the service side ------------------------------------------------------------

    def _arrive(self, r: Request) -> None:
        """An attempt reaches the service: protocol, key, subscription, then the limiter
        (:data:`ORDER`: steps 2-4 from the ``_gate`` table, step 5 from ``_after_limiter``)."""
        now = self.env._now
        lim = self._gate[r.source][r.key][r.method]
        if lim.__class__ is int:  # refused before the limiter: 421, 401 or 402
            self._refused(r, now, lim, _NAN, False)
            return
        status = lim.reserve(now, r.reserve, r.actual)
        if status == LIM_OK:
            r.booked, r.lim = status, lim
            r.callbacks = self._to_complete
            heappush(self._queue, (now + r.service_s, NORMAL, next(self._eid), r))
            return
        outcome = self._after_limiter[r.method][status]
        self._refused(r, now, outcome, float(lim.retry_after(now))
                      if outcome in self._window_retry_after else _NAN, status.phantom)

    def _complete(self, r: Request) -> None:
        """The service settles and replies OK: record the attempt and the request."""
        now = self.env._now
        r.lim.settle(now, r.booked, r.reserve, r.actual)
        t_back = now + r.half_rtt
        if r.conn is not None:
            r.conn.release_at(t_back)
        self._abuf += self._apack(r.rid, r.attempt, r.source, r.method, r.key, r.region,
                                  r.t_send, t_back, rc.OK, r.reserve, r.actual, _NAN, False,
                                  r.wait)
        self._qbuf += self._qpack(r.rid, r.source, r.method, r.key, r.t_first, t_back, rc.OK,
                                  r.attempt)
        if len(self._abuf) >= self._abytes or len(self._qbuf) >= self._qbytes:
            self.rec.flush()
        if r.worker is not None:
            self._finished(r)

    def _refused(self, r: Request, now: float, outcome: int, retry_after: float,
                 phantom: bool) -> None:
        """Record a refused attempt, then retry it or finish the logical request."""
        t_back = now + r.half_rtt
        if r.conn is not None:
            r.conn.release_at(t_back)
        self._abuf += self._apack(r.rid, r.attempt, r.source, r.method, r.key, r.region,
                                  r.t_send, t_back, outcome, 0.0, 0.0, retry_after, phantom,
                                  r.wait)
        if outcome in self._retry_codes[r.source]:
            wait = self._deciders[r.source].delay(r.attempt, None if retry_after != retry_after
                                                  else retry_after)
            if wait is not None:
                r.attempt += 1
                r.t_send = t_back + wait
                r.callbacks = self._to_send
                heappush(self._queue, (now + (r.half_rtt + wait), NORMAL, next(self._eid), r))
                if len(self._abuf) >= self._abytes:
                    self.rec.flush()
                return
        self._qbuf += self._qpack(r.rid, r.source, r.method, r.key, r.t_first, t_back, outcome,
                                  r.attempt)
        if len(self._abuf) >= self._abytes or len(self._qbuf) >= self._qbytes:
            self.rec.flush()
        if r.worker is not None:
            self._finished(r)
