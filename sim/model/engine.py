"""One tier's run: a SimPy environment replaying the plan's demand against the service.

The life of an attempt (times in simulated seconds)::

    client sends at t: a stream on an HTTP/2 connection of its pool (now, after a new
        connection opens, or after queueing; 430 if the account refuses the connection)
    ──rtt/2──► service admits or refuses
        admitted: reserve CU ──service time──► settle, reply ──rtt/2──► client
        refused:  reply (434 / -32005 / 402 / 401 / 421 / oversized) ──rtt/2──► client
    client: done, or wait per its retry policy and send attempt n+1

Send, admission and completion are SimPy timeout callbacks (fire-and-forget, three
events per admitted attempt); closed-loop workers are generator processes.
The open-loop feeder wakes once per ``FEED_HORIZON_S`` and schedules the arrivals of
that slice, so no process or event exists per request before its time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from ..policy.limiter import NO_ALLOWANCE, OVERSIZED, THROTTLED, WindowStats
from ..policy.limiter import OK as LIM_OK
from ..policy.pacing import TokenBucket
from ..policy.retry import RetryDecider
from ..policy.tiers import APIS, RPC, Tier
from ..rng import stream
from ..vocabulary import SIZE_METHOD, Rng
from ..workload.demand import Plan
from . import recorder as rc
from .accounts import AccountPolicies, build_accounts
from .aggregates import MinuteOutcomes
from .transport import QUEUED, REFUSED, ClientPool
from .ws_records import RecorderHandshakes, WebsocketsResult
from .ws_sessions import Websockets

FEED_HORIZON_S = 1.0
_FEED_BLOCK = 4096
_NAN = math.nan


class Request:
    """A logical request in flight (mutable: the attempt number and times change)."""

    __slots__ = ("rid", "source", "method", "key", "region", "items", "reserve", "actual",
                 "service_s", "t_first", "t_send", "attempt", "booked", "half_rtt",
                 "on_done", "conn", "wait")

    def __init__(self, rid, source, method, key, region, items, reserve, actual, service_s,
                 t_first, half_rtt, on_done=None):
        self.rid, self.source, self.method, self.key, self.region = rid, source, method, key, region
        self.items, self.reserve, self.actual, self.service_s = items, reserve, actual, service_s
        self.t_first = self.t_send = t_first
        self.attempt = 1
        self.booked = None  # the limiter's Reservation while admitted
        self.half_rtt = half_rtt
        self.on_done = on_done
        self.conn = None
        self.wait = 0.0


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


class TierRun:
    """Build the model for ``tier`` from ``plan``, then :meth:`run` it once."""

    def __init__(self, plan: Plan, tier: Tier,
                 progress: Callable[[float], None] | None = None,
                 spool: str | None = None) -> None:
        sc = plan.scenario
        self.plan, self.tier, self.progress = plan, tier, progress
        self.env = simpy.Environment()
        self.accounts: list[AccountPolicies] = build_accounts(plan, tier)
        # ``spool``: a path prefix for Parquet spool files; rows then leave memory in chunks.
        sinks = ((rc.ParquetSink(rc.ATTEMPT_COLUMNS, f"{spool}-attempts.parquet"),
                  rc.ParquetSink(rc.REQUEST_COLUMNS, f"{spool}-requests.parquet"))
                 if spool else (None, None))
        self.minutes = MinuteOutcomes()
        self.rec = rc.Recorder(*sinks, on_chunk=self.minutes)
        t = plan.tables
        self._key_account = t.key_account.tolist()
        self._method_rpc = [APIS[a] == RPC for a in t.method_api]
        self._method_needs_h2 = [m == SIZE_METHOD or APIS[a] == RPC
                                 for m, a in zip(t.methods, t.method_api, strict=True)]
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
        self._next_rid = len(plan.demand)
        # A source's connections count against its key's account (the first for a key of
        # no account: its requests get 401 all the same).
        self._source_account = [max(0, self._key_account[t.keys.index(src.key)])
                                for src in sc.sources]
        self._pools: dict[tuple[int, int], ClientPool] = {}
        self.ws = None
        if sc.streams:
            a0 = self.accounts[0]
            # A handshake is an attempt row of source ``len(sources) + client``, its
            # method the stream's name.
            rows = [(len(sc.sources) + i, t.methods.index(c.stream), t.keys.index(c.key),
                     t.regions.index(c.region or sc.regions[0].name))
                    for i, c in enumerate(sc.streams)]
            self.ws = Websockets(
                self.env, a0.limiter, a0.tier, list(sc.streams), sc.ws, plan.loaded.pricing,
                key_valid=lambda k: sc.account_of_key(k) is not None, seed=sc.seed,
                duration_s=sc.duration_s, day_offset_s=sc.day_offset_s,
                accounts=[(a.limiter, a.tier) for a in self.accounts],
                account_of_key=lambda k: sc.account_of_key(k),
                handshakes=RecorderHandshakes(self.rec, rows,
                                              plan.loaded.pricing.websocket.connect_cu))

    # -- the run ---------------------------------------------------------------------

    def run(self) -> TierResult:
        """Simulate until every request, retries included, has its final outcome."""
        env = self.env
        env.process(self._feed())
        sc = self.plan.scenario
        for i in self.plan.closed_sources:
            for w in range(sc.sources[i].workers.count):
                env.process(self._worker(i, w))
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
        allowances = [a.daily_allowance_cu for a in accounts]
        return TierResult(
            tier=self.tier, attempt_sink=self.rec.attempt_sink,
            request_sink=self.rec.request_sink, minutes=self.minutes.table(),
            refused_handshakes=self.minutes.refused_handshakes(),
            windows=combined_windows([a.windows for a in accounts]),
            window_s=self.accounts[0].limiter.window_s,
            budget_cu=sum(a.budget_cu for a in accounts),
            daily_used=_sum_daily([a.daily_used for a in accounts]),
            daily_exhausted_at=_earliest([a.daily_exhausted_at for a in accounts]),
            daily_allowance_cu=None if None in allowances else sum(allowances),
            retry_budget_refusals=sum(d.budget_refusals for d in self._deciders),
            end_s=env.now,
            connections=ConnectionsResult.combined([a.connections for a in accounts]),
            websockets=ws, accounts=accounts)

    def _feed(self):
        """Open loop: schedule each slice's arrivals; requests never wait for replies."""
        d, env = self.plan.demand, self.env
        half_rtt, send, deciders = self._half_rtt, self._send_event, self._deciders
        n, i, next_report = len(d), 0, 0.0
        base, cols = 0, None
        while i < n:
            until = env.now + FEED_HORIZON_S
            while i < n:
                j = i - base
                if cols is None or j == len(cols[0]):
                    # Python values for the next block only: memory stays flat in run length.
                    base, j = i, 0
                    cols = [c[i:i + _FEED_BLOCK].tolist() for c in
                            (d.t, d.source, d.method, d.key, d.region, d.items, d.reserve,
                             d.actual, d.service_s)]
                    t, source, method, key, region, items, reserve, actual, service = cols
                if t[j] >= until:
                    break
                h = half_rtt[region[j]]
                r = Request(i, source[j], method[j], key[j], region[j], items[j], reserve[j],
                            actual[j], service[j], t[j], h)
                deciders[r.source].on_request()
                env.timeout(t[j] - env.now, r).callbacks.append(send)
                i += 1
            if self.progress and env.now >= next_report:
                self.progress(env.now)
                next_report = env.now + 60.0
            if i < n:
                yield env.timeout(max(until, math.floor(t[i - base])) - env.now)

    def _worker(self, src_idx: int, worker: int):
        """Closed loop: send, wait for the final outcome, think, repeat until the end."""
        sc, env = self.plan.scenario, self.env
        src = sc.sources[src_idx]
        drawer = self.plan.drawer_for(src_idx, worker)
        think_rng = stream(sc.seed, Rng.SOURCE, src.name, Rng.WORKER, worker, Rng.THINK)
        tab = self.plan.tables
        key = tab.keys.index(src.key)
        region = tab.regions.index(sc.region_of(src))
        h = self._half_rtt[region]
        decider = self._deciders[src_idx]
        k, cols, think = 0, None, None
        # Workers start spread over one think time, not all at t = 0.
        yield env.timeout(think_rng.random() * src.workers.think.mean)
        while env.now < sc.duration_s:
            if cols is None or k == len(cols[0]):
                # Think times are drawn chunk by chunk from the worker's own stream, so
                # the k-th pause is the same on every tier and no value ever recurs.
                cols, k = [c.tolist() for c in drawer.draw(256)], 0
                think = src.workers.think.sample(think_rng, 256).tolist()
            done = env.event()
            r = Request(self._next_rid, src_idx, cols[0][k], key, region, cols[1][k],
                        cols[2][k], cols[3][k], cols[4][k], env.now, h, done)
            self._next_rid += 1
            decider.on_request()
            self._send(r, env.now)
            pause = think[k]
            k += 1
            yield done
            yield env.timeout(h + pause)

    # -- the client's transport ------------------------------------------------------

    def _pool(self, source: int, region: int) -> ClientPool:
        pool = self._pools.get((source, region))
        if pool is None:
            sc, tab = self.plan.scenario, self.plan.tables
            client = sc.clients[sc.sources[source].client]
            http = client.http
            account = self.accounts[self._source_account[source]]
            pool = ClientPool(
                account.connections, tab.regions[region], self.env,
                rtt_s=2 * self._half_rtt[region],
                max_streams=http.max_streams_per_conn if client.http_version == "2" else 1,
                max_connections=http.max_connections, connect_rtts=http.connect_rtts,
                idle_timeout_s=http.idle_timeout_s, reuse=http.reuse, on_ready=self._on_stream)
            self._pools[(source, region)] = pool
        return pool

    def _send_event(self, event) -> None:
        self._send(event.value, self.env.now)

    def _paced_event(self, event) -> None:
        self._send(event.value, self.env.now, paced=True)

    def _send(self, r: Request, now: float, paced: bool = False) -> None:
        """The client sends an attempt: pace it, get a stream, then it travels rtt/2."""
        pacer = self._pacers[r.source]
        if pacer is not None and not paced:
            wait = pacer.delay(now, r.reserve)
            if wait > 0.0:
                self.env.timeout(wait, r).callbacks.append(self._paced_event)
                return
        pool = self._pool(r.source, r.region)
        start, conn = pool.acquire(now)
        if start >= 0.0:
            r.conn, r.wait = conn, start - now
            self.env.timeout(start - now + r.half_rtt, r).callbacks.append(self._arrive)
        elif start == QUEUED:
            pool.enqueue(r, now)
        else:
            assert start == REFUSED
            r.conn, r.wait = None, 0.0
            self.env.timeout(r.half_rtt, r).callbacks.append(self._refused_430)

    def _on_stream(self, r: Request, start: float, conn, since: float) -> None:
        r.conn, r.wait = conn, start - since
        self.env.timeout(start - self.env.now + r.half_rtt, r).callbacks.append(self._arrive)

    def _refused_430(self, event) -> None:
        self._reply(event.value, self.env.now, rc.CONN_430, _NAN, False)

    # -- the service side ------------------------------------------------------------

    def _arrive(self, event) -> None:
        """An attempt reaches the service: protocol, key, subscription, then the limiter."""
        r, now = event.value, self.env.now
        m = r.method
        retry_after = _NAN
        if self._method_needs_h2[m] and not self._h2_ok[r.source]:
            outcome = rc.PROTO_421
        elif (acct := self._key_account[r.key]) < 0:
            outcome = rc.AUTH_401
        elif not self.accounts[acct].method_in_tier[m]:
            outcome = rc.PAY_402
        else:
            lim = self.accounts[acct].limiter
            status = lim.reserve(now, r.reserve, r.actual)
            if status == LIM_OK:
                r.booked = status
                self.env.timeout(r.service_s, r).callbacks.append(self._complete)
                return
            if status == THROTTLED:
                if self._method_rpc[m]:
                    outcome = rc.RPC_32005
                else:
                    outcome, retry_after = rc.HTTP_434, float(lim.retry_after(now))
                self._reply(r, now, outcome, retry_after, status.phantom)
                return
            outcome = rc.PAY_402 if status == NO_ALLOWANCE else rc.OVERSIZED
            assert status in (NO_ALLOWANCE, OVERSIZED)
        self._reply(r, now, outcome, retry_after, False)

    def _complete(self, event) -> None:
        r, now = event.value, self.env.now
        self.accounts[self._key_account[r.key]].limiter.settle(now, r.booked, r.reserve,
                                                               r.actual)
        self._reply(r, now, rc.OK, _NAN, False)

    def _reply(self, r: Request, now: float, outcome: int, retry_after: float,
               phantom: bool) -> None:
        """Record the attempt, then retry it or finish the logical request."""
        t_back = now + r.half_rtt
        ok = outcome == rc.OK
        if r.conn is not None:
            r.conn.release_at(t_back)
        self.rec.attempt(r.rid, r.attempt, r.source, r.method, r.key, r.region, r.t_send,
                         t_back, outcome, r.reserve if ok else 0.0, r.actual if ok else 0.0,
                         retry_after, phantom, r.wait)
        if not ok and outcome in self._retry_codes[r.source]:
            wait = self._deciders[r.source].delay(r.attempt, None if retry_after != retry_after
                                                  else retry_after)
            if wait is not None:
                r.attempt += 1
                r.t_send = t_back + wait
                self.env.timeout(r.half_rtt + wait, r).callbacks.append(self._send_event)
                return
        self.rec.request(r.rid, r.source, r.method, r.t_first, t_back, outcome, r.attempt)
        if r.on_done is not None:
            r.on_done.succeed()
