"""Websocket connections of the accounts: slots, handshakes, publishing, reconnect storms.

Along a timeline (cap 2, ``stale_expiry_s`` 30, a client holding 2 connections and
reconnecting every second, ``fixed`` 1 s)::

    t=0    2 handshakes -> ok               slots: 2 live
    t=10   both drop uncleanly              slots: 0 live, 2 stale until t=40
    t=11   2 handshakes -> 435, Retry-After 29 (seconds to the earliest stale expiry)
    ...    one pair a second, Retry-After 28, 27, ..., 1
    t=40   the stale slots expire -> ok     slots: 2 live
    events published on the stream in 10 <= t < 40 are lost to both connections

Rules (spec 5, 6, 7, 8.2.3, 8.3; DESIGN rows 8.2.3, 6.2, 8.3, 7). A handshake checks,
in order: the key (``401``), the tier's API selection (``402``: the Streams API for
pending-txs / new-blocks / pending-logs, the Search API for monitoring), the account's
slot cap (``435`` with Retry-After), then reserves ``connect_cu`` in the account limiter
(window exhausted or cost over the budget: ``ws_cu_rejected`` with the limiter's
Retry-After; no daily allowance: ``402``); a slot taken by a handshake that is then
refused is given back at once. A clean close frees the slot at once, an unclean one
leaves it stale for ``stale_expiry_s``. Slots are computed lazily from ``now``.

The service publishes each stream once per account: a process per stream with at least
one client (new-blocks one event per slot, missed with a probability; the others
Poisson). Each event goes to every live connection on the stream; on a billed stream
each delivery reserves ``publish_cu`` at publish time. A delivery that cannot reserve
closes that connection (``on_exhausted = "close"``: an error and a clean close, then the
client's reconnect policy) or is dropped (``"drop"``: the stream stays open).

Events are counted, not stored: each stream keeps a running count of events published,
and a connection notes the count when it goes up or down, so an event costs O(1) plus
O(live connections) on billed streams only. Lost events are those published while a
connection its client wanted was down, plus deliveries dropped for exhaustion.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable

import numpy as np
import simpy

from ..config.websockets import ExpiryRange, StreamClient, StreamSource, WebsocketSettings
from ..draws import BlockDraws
from ..policy.limiter import NO_ALLOWANCE
from ..policy.limiter import OK as LIM_OK
from ..policy.limiters import Limiter
from ..policy.pricing import Pricing
from ..policy.tiers import Tier
from ..rng import stream
from ..vocabulary import CLOSE_KINDS, DAY_S, HANDSHAKE_OUTCOMES, Rng
from ..workload.arrivals import arrival_times
from . import recorder as rc

CLEAN, UNCLEAN, EXHAUSTED, END = range(len(CLOSE_KINDS))  # ``sessions["close_kind"]`` codes
_BLOCK = 1024
_NAN = math.nan
_W_END, _W_SESSION, _W_DROP = 0, 1, 2  # why a live connection's wait ended (ties: this order)


def _whole_seconds_until(target: float, now: float) -> int:
    """Whole seconds (ceil, at least 1) from ``now`` until ``target``."""
    wait = max(1, math.ceil(target - now))
    if now + wait < target:  # float rounding left us a hair short
        wait += 1
    return wait


def _step(ts: list, lives: list, stales: list, t: float, live: int, stale: int) -> None:
    """Append a (t, live, stale) step; steps at one time merge, steps that change
    nothing (a slot taken and given back at once) vanish. The first row stays."""
    if ts[-1] == t and len(ts) > 1:
        if lives[-2] == live and stales[-2] == stale:
            ts.pop()
            lives.pop()
            stales.pop()
        else:
            lives[-1], stales[-1] = live, stale
    elif ts[-1] == t:
        lives[-1], stales[-1] = live, stale
    elif lives[-1] != live or stales[-1] != stale:
        ts.append(t)
        lives.append(live)
        stales.append(stale)


class SlotPool:
    """The account's active-websocket slots (spec 8.3); pure, time passed in as ``now``.

    ``live + stale <= cap`` always. A slot released uncleanly stays stale until its
    expiry; expiries sit in a heap and are applied lazily by whichever call comes next.
    :meth:`series` gives the (time, live, stale) steps for the plot: one row per time at
    which the state changed, holding the state after that time's last change.
    """

    def __init__(self, cap: int, retry_after_live_s: float = 30.0, t0: float = 0.0) -> None:
        if cap < 0:
            raise ValueError("cap must be >= 0")
        self.cap = int(cap)
        self.retry_after_live_s = max(1, math.ceil(retry_after_live_s))
        self.live = 0
        self._expiries: list[float] = []
        self._t, self._live, self._stale = [float(t0)], [0], [0]

    def _record(self, t: float) -> None:
        _step(self._t, self._live, self._stale, t, self.live, len(self._expiries))

    def _expire(self, now: float) -> None:
        heap = self._expiries
        while heap and heap[0] <= now:
            self._record(heapq.heappop(heap))

    def stale(self, now: float) -> int:
        """Stale slots at ``now``."""
        self._expire(now)
        return len(self._expiries)

    def acquire(self, now: float) -> tuple[bool, int]:
        """Take a slot: ``(True, 0)``, or ``(False, Retry-After)`` at the cap.

        Retry-After is the whole seconds until the earliest stale slot expires, or
        ``retry_after_live_s`` when every slot is live (and always when the cap is 0).
        """
        self._expire(now)
        heap = self._expiries
        if self.live + len(heap) < self.cap:
            self.live += 1
            self._record(now)
            return True, 0
        if not heap:
            return False, self.retry_after_live_s
        return False, _whole_seconds_until(heap[0], now)

    def release_clean(self, now: float) -> None:
        """A clean close: the slot is free at once."""
        if self.live <= 0:
            raise RuntimeError("release without a live slot")
        self._expire(now)
        self.live -= 1
        self._record(now)

    def release_unclean(self, now: float, expiry_s: float) -> None:
        """An unclean disconnect: the slot stays stale until ``now + expiry_s``."""
        if expiry_s <= 0:
            self.release_clean(now)
            return
        if self.live <= 0:
            raise RuntimeError("release without a live slot")
        self._expire(now)
        self.live -= 1
        heapq.heappush(self._expiries, now + expiry_s)
        self._record(now)

    def series(self, until: float = math.inf) -> dict[str, np.ndarray]:
        """Columns ``t``, ``live``, ``stale``, ``cap`` of every change, expiries up to
        ``until`` included; does not change the pool."""
        t, live, stale = list(self._t), list(self._live), list(self._stale)
        left = len(self._expiries)
        for e in sorted(x for x in self._expiries if x <= until):
            left -= 1
            _step(t, live, stale, e, self.live, left)
        return {"t": np.asarray(t, dtype=np.float64), "live": np.asarray(live, dtype=np.int32),
                "stale": np.asarray(stale, dtype=np.int32),
                "cap": np.full(len(t), self.cap, dtype=np.int32)}


def summed_series(series: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Several pools' (t, live, stale, cap) steps as one: the sums at each change."""
    if len(series) == 1:
        return series[0]
    t = np.unique(np.concatenate([s["t"] for s in series]))
    out = {"t": t}
    for col in ("live", "stale", "cap"):
        total = np.zeros(len(t), dtype=np.int32)
        for s in series:
            total += s[col][np.searchsorted(s["t"], t, side="right") - 1]
        out[col] = total
    return out


class _Conn:
    """One connection a client wants: its state and the event-count marks."""

    __slots__ = ("client", "idx", "stream", "proc", "live", "mark", "want_since", "t_open",
                 "open_mark", "dropped", "lost_before", "faults", "reconnect", "stale")

    def __init__(self, client: int, idx: int, stream_name: str, faults: BlockDraws,
                 reconnect: BlockDraws, stale: BlockDraws) -> None:
        self.client, self.idx, self.stream = client, idx, stream_name
        self.proc: simpy.Process | None = None
        self.live = False
        self.mark = self.open_mark = self.dropped = self.lost_before = 0
        self.want_since = self.t_open = 0.0
        self.faults, self.reconnect, self.stale = faults, reconnect, stale


class Websockets:
    """The websocket side of one tier's run, sharing ``env`` and ``limiter`` with HTTP.

    Build it, call :meth:`start` before ``env.run()``, and :meth:`result` after the
    environment has reached ``duration_s``. ``key_valid(label)`` tells whether a key
    label is one of the account's keys. Nothing happens at or after ``duration_s``.

    Several accounts: ``accounts`` lists each account's ``(limiter, tier)`` and
    ``account_of_key(label)`` gives a key's account index (None: no account, 401); each
    account then has its own slot pool, and a client's handshakes and billed deliveries
    draw on its key's account. Without them, ``limiter`` and ``tier`` are the one account.
    """

    def __init__(self, env: simpy.Environment, limiter: Limiter, tier: Tier,
                 clients: list[StreamClient], settings: WebsocketSettings, pricing: Pricing,
                 key_valid: Callable[[str], bool], seed: int, duration_s: float, *,
                 day_offset_s: float = 0.0, accounts: list[tuple[Limiter, Tier]] | None = None,
                 account_of_key: Callable[[str], int | None] | None = None) -> None:
        names = [c.name for c in clients]
        if len(set(names)) != len(names):
            raise ValueError("stream clients: expected unique names")
        self.env, self.limiter, self.tier = env, limiter, tier
        self.clients, self.settings, self.seed = list(clients), settings, int(seed)
        self.duration_s, self.day_offset_s = float(duration_s), float(day_offset_s)
        if accounts is None:
            accounts = [(limiter, tier)]
            def account_of_key(k: str) -> int | None:
                return 0 if key_valid(k) else None
        self.pools = [SlotPool(t.ws_cap, settings.retry_after_live_s) for _, t in accounts]
        self._limiters = [lim for lim, _ in accounts]
        owner = [account_of_key(c.key) for c in clients]
        self._acct = [-1 if a is None else a for a in owner]  # by client
        self._connect_cu = float(pricing.websocket.connect_cu)
        used = list(dict.fromkeys(c.stream for c in clients))
        self._sources: dict[str, StreamSource] = {s: settings.source(s) for s in used}
        self._publish_cu = {s: float(pricing.websocket.publish_cu.get(s, 0.0)) if src.billed
                            else 0.0 for s, src in self._sources.items()}
        self._published = dict.fromkeys(used, 0)
        self._live: dict[str, dict[_Conn, None]] = {s: {} for s in used}
        self._active: dict[_Conn, None] = {}  # connections currently wanted
        self._key_ok = [a >= 0 for a in self._acct]
        self._allowed = [accounts[max(a, 0)][1].includes(c.api)
                         for a, c in zip(self._acct, clients, strict=True)]
        self._drop_all = [tuple(sorted(c.faults.drop_all_at_s)) for c in clients]
        n = len(clients)
        self._wanted, self._connected = [0.0] * n, [0.0] * n
        self._delivered, self._lost_down, self._dropped = [0] * n, [0] * n, [0] * n
        self._gave_up = [0] * n
        self.cu_connect = self.cu_publish = 0.0
        self._sess = tuple([] for _ in range(8))
        self._hs = tuple([] for _ in range(5))
        self._started = False
        self._result: dict | None = None

    @property
    def pool(self) -> SlotPool:
        """The first account's slot pool (the only one with a single account)."""
        return self.pools[0]

    # -- processes -------------------------------------------------------------------

    def start(self) -> None:
        """Create the client processes, then one publisher per stream with clients."""
        if self._started:
            raise RuntimeError("start() called twice")
        self._started = True
        env, seed = self.env, self.seed
        for ci, c in enumerate(self.clients):
            if c.arrival is not None:
                env.process(self._feeder(ci))
                continue
            for k in range(c.connections):
                base = (Rng.WS, Rng.CLIENT, c.name, k)
                conn = _Conn(ci, k, c.stream, BlockDraws(stream(seed, *base, Rng.FAULTS), _BLOCK),
                             BlockDraws(stream(seed, *base, Rng.RECONNECT), _BLOCK),
                             BlockDraws(stream(seed, *base, Rng.STALE), _BLOCK))
                conn.proc = env.process(self._holder(conn, base))
        for s in self._sources:
            env.process(self._publisher(s))

    def _holder(self, conn: _Conn, base: tuple):
        """A closed-loop connection: connect, live, drop or end, reconnect, repeat."""
        env, T, ci = self.env, self.duration_s, conn.client
        c = self.clients[ci]
        policy = c.reconnect
        lengths = (None if c.session is None
                   else BlockDraws(stream(self.seed, *base, Rng.SESSION), 64, c.session.sample))
        gaps = BlockDraws(stream(self.seed, *base, Rng.GAP), 64, c.gap.sample)
        while True:
            self._want(conn, env.now)
            session_end, failures = math.inf, 0
            while True:
                now = env.now
                outcome, retry_after = self._handshake(conn, now)
                if outcome == rc.OK:
                    failures = 0
                    if lengths is not None and session_end == math.inf:
                        session_end = now + lengths()
                    self._open(conn, now)
                    reason, wake = self._next_wake(conn, now, session_end)
                    try:
                        yield env.timeout(wake - now)
                    except simpy.Interrupt:  # closed by a publisher: CU exhausted
                        reason = None
                    if reason == _W_END:
                        return
                    if reason == _W_SESSION:
                        self._close(conn, env.now, CLEAN)
                        break
                    if reason == _W_DROP:
                        self._drop(conn, env.now)
                    delay = self._delay(policy, conn, 1, _NAN)
                else:
                    failures += 1
                    if policy.max_attempts is not None and failures >= policy.max_attempts:
                        self._gave_up[ci] += 1
                        return  # still wanted, down until the end of the run
                    delay = max(self._delay(policy, conn, failures + 1, retry_after),
                                self.settings.min_retry_s)
                t_next = env.now + delay
                if t_next >= session_end and session_end < T:
                    yield env.timeout(session_end - env.now)
                    break
                if t_next >= T:
                    return
                yield env.timeout(delay)
            self._unwant(conn, env.now)
            gap = gaps()
            if env.now + gap >= T:
                return
            yield env.timeout(gap)

    def _feeder(self, ci: int):
        """Open-loop sessions: each arrival tries once; refused sessions are lost."""
        env, T, seed, c = self.env, self.duration_s, self.seed, self.clients[ci]
        base = (Rng.WS, Rng.CLIENT, c.name)
        times = arrival_times(c.arrival, stream(seed, *base, Rng.WS_ARRIVAL), T, self.day_offset_s)
        lengths = c.session.sample(stream(seed, *base, Rng.SESSION), times.size)
        draws = [BlockDraws(stream(seed, *base, p), _BLOCK)
                 for p in (Rng.FAULTS, Rng.RECONNECT, Rng.STALE)]
        on_end = self._end_wanting
        for k, (t, length) in enumerate(zip(times.tolist(), lengths.tolist(), strict=True)):
            if t > env.now:
                yield env.timeout(t - env.now)
            conn = _Conn(ci, k, c.stream, *draws)
            end = t + length
            self._want(conn, t)
            outcome, _ = self._handshake(conn, t)
            if outcome == rc.OK:
                self._open(conn, t)
                conn.proc = env.process(self._open_loop_live(conn, end))
            elif end < T:
                env.timeout(end - t, conn).callbacks.append(on_end)

    def _open_loop_live(self, conn: _Conn, end: float):
        """An admitted open-loop session: live until its end, a drop or exhaustion."""
        env = self.env
        reason, wake = self._next_wake(conn, env.now, end)
        try:
            yield env.timeout(wake - env.now)
        except simpy.Interrupt:
            reason = None
        if reason == _W_END:
            return
        if reason == _W_SESSION:
            self._close(conn, env.now, CLEAN)
            self._unwant(conn, env.now)
            return
        if reason == _W_DROP:
            self._drop(conn, env.now)
        if end < self.duration_s:  # down (lost) for the rest of the session
            yield env.timeout(end - env.now)
            self._unwant(conn, env.now)

    def _end_wanting(self, event) -> None:
        self._unwant(event.value, self.env.now)

    def _publisher(self, s: str):
        """Publish ``s`` once per account; billed deliveries reserve CU one by one."""
        env, live, published = self.env, self._live[s], self._published
        lims, acct = self._limiters, self._acct
        cost = self._publish_cu[s]
        close = self.settings.on_exhausted == "close"
        for t in self._event_times(self._sources[s]):
            yield env.timeout(t - env.now)
            published[s] += 1
            if cost <= 0.0 or not live:
                continue
            now, spent = env.now, 0.0
            for conn in list(live) if close else live:
                if lims[acct[conn.client]].spend(now, cost) == LIM_OK:
                    spent += cost
                    continue
                conn.dropped += 1
                if close:
                    self._close(conn, now, EXHAUSTED)
                    if conn.proc is not None and conn.proc.is_alive:
                        conn.proc.interrupt("cu exhausted")
            self.cu_publish += spent

    def _event_times(self, src: StreamSource):
        """Publish times of ``src`` in ``[0, duration_s)``, increasing."""
        T = self.duration_s
        rng = stream(self.seed, Rng.WS, Rng.PUBLISH, src.stream)
        if src.kind == "block":
            k, p = 1, src.miss_probability
            while True:
                for u in rng.random(_BLOCK).tolist():
                    t = k * src.slot_s
                    if t >= T:
                        return
                    k += 1
                    if u >= p:
                        yield t
        if src.rate <= 0:
            return
        accept = None
        top = src.rate
        if src.hourly_weights is not None:  # thinning against the busiest hour
            w = np.asarray(src.hourly_weights, dtype=float)
            w = w * (24.0 / w.sum())
            top = src.rate * w.max()
            accept = (w / w.max()).tolist()
        off, t = self.day_offset_s, 0.0
        while True:
            gaps = (rng.standard_exponential(_BLOCK) / top).tolist()
            us = rng.random(_BLOCK).tolist() if accept is not None else gaps
            for g, u in zip(gaps, us, strict=True):
                t += g
                if t >= T:
                    return
                if accept is None or u < accept[int(((t + off) % DAY_S) // 3600.0)]:
                    yield t

    # -- the service side and the bookkeeping ---------------------------------------

    def _handshake(self, conn: _Conn, now: float) -> tuple[int, float]:
        """Key, API selection, slot cap, connect CU; log and return (outcome, Retry-After)."""
        ci, retry_after = conn.client, _NAN
        if not self._key_ok[ci]:
            outcome = rc.AUTH_401
        elif not self._allowed[ci]:
            outcome = rc.PAY_402
        else:
            pool, lim = self.pools[self._acct[ci]], self._limiters[self._acct[ci]]
            ok, wait = pool.acquire(now)
            if not ok:
                outcome, retry_after = rc.WS_435, float(wait)
            else:
                status = lim.spend(now, self._connect_cu)
                if status == LIM_OK:
                    outcome = rc.OK
                    self.cu_connect += self._connect_cu
                else:
                    pool.release_clean(now)
                    if status == NO_ALLOWANCE:
                        outcome = rc.PAY_402
                    else:  # THROTTLED, or OVERSIZED (a connect cost above the budget)
                        outcome = rc.WS_CU
                        retry_after = float(lim.retry_after(now))
        for col, v in zip(self._hs, (now, ci, conn.idx, outcome, retry_after), strict=True):
            col.append(v)
        return outcome, retry_after

    def _next_wake(self, conn: _Conn, now: float, session_end: float) -> tuple[int, float]:
        """When and why a connection that just opened at ``now`` stops being live."""
        faults = self.clients[conn.client].faults
        wake, reason = self.duration_s, _W_END
        if session_end < wake:
            wake, reason = session_end, _W_SESSION
        if faults.mean_time_between_drops_s is not None:
            drop = now - faults.mean_time_between_drops_s * math.log1p(-conn.faults())
            if drop < wake:
                wake, reason = drop, _W_DROP
        at = self._drop_all[conn.client]
        if at:
            i = bisect.bisect_right(at, now)
            if i < len(at) and at[i] < wake:
                wake, reason = at[i], _W_DROP
        return reason, wake

    def _drop(self, conn: _Conn, now: float) -> None:
        frac = self.clients[conn.client].faults.clean_close_fraction
        clean = frac >= 1.0 or (frac > 0.0 and conn.faults() < frac)
        self._close(conn, now, CLEAN if clean else UNCLEAN)

    def _delay(self, policy, conn: _Conn, n: int, retry_after: float) -> float:
        """Seconds before reconnect attempt ``n`` (1 = the first after a disconnect)."""
        kind = policy.policy
        if kind == "immediate":
            return 0.0
        if kind == "fixed":
            return policy.delay_s
        if kind == "retry-after" and retry_after == retry_after:  # a header (not NaN)
            return retry_after + policy.jitter_s * conn.reconnect()
        return conn.reconnect() * min(policy.cap_s, policy.base_s * 2.0 ** min(n - 1, 60))

    def _want(self, conn: _Conn, now: float) -> None:
        conn.want_since, conn.mark, conn.lost_before = now, self._published[conn.stream], 0
        self._active[conn] = None

    def _unwant(self, conn: _Conn, now: float) -> None:
        self._lost_down[conn.client] += self._published[conn.stream] - conn.mark
        self._wanted[conn.client] += now - conn.want_since
        del self._active[conn]

    def _open(self, conn: _Conn, now: float) -> None:
        pub = self._published[conn.stream]
        lost = pub - conn.mark
        self._lost_down[conn.client] += lost
        conn.lost_before += lost
        conn.live, conn.t_open, conn.open_mark, conn.dropped = True, now, pub, 0
        self._live[conn.stream][conn] = None

    def _close(self, conn: _Conn, now: float, kind: int) -> None:
        ci, pub = conn.client, self._published[conn.stream]
        delivered = pub - conn.open_mark - conn.dropped
        self._session_row(conn, now, kind, delivered)
        self._delivered[ci] += delivered
        self._dropped[ci] += conn.dropped
        self._connected[ci] += now - conn.t_open
        conn.live, conn.mark, conn.lost_before = False, pub, 0
        del self._live[conn.stream][conn]
        pool = self.pools[self._acct[ci]]
        if kind == UNCLEAN:
            pool.release_unclean(now, self._stale_expiry(conn))
        else:
            pool.release_clean(now)

    def _session_row(self, conn: _Conn, close_s: float, kind: int, delivered: int) -> None:
        s = self._sess
        for col, v in zip(s, (conn.client, conn.idx, conn.t_open, close_s, kind, delivered,
                              conn.dropped, conn.lost_before), strict=True):
            col.append(v)

    def _stale_expiry(self, conn: _Conn) -> float:
        exp = self.settings.stale_expiry_s
        if isinstance(exp, ExpiryRange):
            return exp.low + (exp.high - exp.low) * conn.stale()
        return float(exp)

    # -- results ---------------------------------------------------------------------

    def result(self) -> dict:
        """Columnar records and totals of the run (computed once, at ``duration_s``).

        ``sessions``: one row per successful handshake (a connection's live period):
        ``client``, ``conn`` (connection index; the arrival index for open-loop
        clients), ``open_s``, ``close_s``, ``close_kind`` (:data:`CLOSE_KINDS` code),
        ``events_delivered``, ``events_dropped`` (exhaustion, while live) and
        ``events_lost_before`` (published while it was down just before this open); rows
        in the order they closed, those still open at the end last.
        ``handshake_log``: ``t``, ``client``, ``conn``, ``outcome`` (recorder code),
        ``retry_after_s`` (NaN without a header). ``clients``: per client ``name``,
        ``stream``, ``region`` ("" for none), ``wanted_s``, ``connected_s``, ``events_delivered``,
        ``events_lost_down``, ``events_dropped``, ``events_lost`` (the two summed),
        ``gave_up``. Totals: ``handshakes`` (by name), ``slots``, ``cu_connect``,
        ``cu_publish``, ``events_published`` (by stream), ``events_delivered``,
        ``events_lost``, ``wanted_s``, ``connected_s``, ``connected_fraction``.
        """
        if self._result is not None:
            return self._result
        if self.env.peek() < self.duration_s:
            raise RuntimeError("result() called before the run reached duration_s")
        T = self.duration_s
        wanted, connected = list(self._wanted), list(self._connected)
        delivered, lost_down = list(self._delivered), list(self._lost_down)
        dropped = list(self._dropped)
        sess = tuple(list(col) for col in self._sess)
        for conn in self._active:  # still wanted at the end of the run
            ci, pub = conn.client, self._published[conn.stream]
            wanted[ci] += T - conn.want_since
            if conn.live:
                d = pub - conn.open_mark - conn.dropped
                for col, v in zip(sess, (ci, conn.idx, conn.t_open, T, END, d, conn.dropped,
                                         conn.lost_before), strict=True):
                    col.append(v)
                delivered[ci] += d
                dropped[ci] += conn.dropped
                connected[ci] += T - conn.t_open
            else:
                lost_down[ci] += pub - conn.mark
        dtypes = (np.int16, np.int32, np.float64, np.float64, np.int8, np.int64, np.int64,
                  np.int64)
        names = ("client", "conn", "open_s", "close_s", "close_kind", "events_delivered",
                 "events_dropped", "events_lost_before")
        sessions = {n: np.asarray(c, dtype=d) for n, c, d in zip(names, sess, dtypes, strict=True)}
        h = self._hs
        log = {"t": np.asarray(h[0], dtype=np.float64), "client": np.asarray(h[1], dtype=np.int16),
               "conn": np.asarray(h[2], dtype=np.int32), "outcome": np.asarray(h[3], dtype=np.int8),
               "retry_after_s": np.asarray(h[4], dtype=np.float64)}
        counts = np.bincount(log["outcome"].astype(np.int64), minlength=len(rc.OUTCOMES))
        lost = [a + b for a, b in zip(lost_down, dropped, strict=True)]
        total_wanted, total_connected = sum(wanted), sum(connected)
        self._result = {
            "sessions": sessions,
            "close_kinds": CLOSE_KINDS,
            "handshakes": {o: int(counts[rc.OUTCOMES.index(o)]) for o in HANDSHAKE_OUTCOMES},
            "handshake_log": log,
            "outcomes": rc.OUTCOMES,
            "slots": summed_series([p.series(T) for p in self.pools]),
            "slots_by_account": [p.series(T) for p in self.pools],
            "clients": {
                "name": np.asarray([c.name for c in self.clients], dtype=str),
                "stream": np.asarray([c.stream for c in self.clients], dtype=str),
                "region": np.asarray([c.region or "" for c in self.clients], dtype=str),
                "wanted_s": np.asarray(wanted), "connected_s": np.asarray(connected),
                "events_delivered": np.asarray(delivered, dtype=np.int64),
                "events_lost_down": np.asarray(lost_down, dtype=np.int64),
                "events_dropped": np.asarray(dropped, dtype=np.int64),
                "events_lost": np.asarray(lost, dtype=np.int64),
                "gave_up": np.asarray(self._gave_up, dtype=np.int64)},
            "cu_connect": self.cu_connect,
            "cu_publish": self.cu_publish,
            "events_published": dict(self._published),
            "events_delivered": int(sum(delivered)),
            "events_lost": int(sum(lost)),
            "wanted_s": total_wanted,
            "connected_s": total_connected,
            "connected_fraction": total_connected / total_wanted if total_wanted > 0 else _NAN,
        }
        return self._result
