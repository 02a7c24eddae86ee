"""The websocket session processes of one tier's run: clients, handshakes, publishing.

Closed-loop clients hold ``connections`` connections each (a generator per connection:
connect, live, drop or end, reconnect); open-loop clients try one handshake per arrival
and hold an admitted session until its end (the Erlang-B set-up). The service side
decides each handshake (key, API selection, the account's :class:`SlotPool`, connect
CU) and publishes each stream once per account. The rules and a timeline are in
:mod:`sim.model.websockets`; what is recorded, and how, in :mod:`sim.model.websockets.records`.

Events are counted, not stored: a connection notes how many its stream had published
when it goes up or down (:class:`~sim.model.websockets.publish.PublishTimes` counts them
lazily). Only a billed stream with live connections has a SimPy event per publish, a
timeout callback that spends for every live connection in one pass and schedules the
next; an unbilled stream, or one nobody is connected to, costs no event at all. Counted
lazily, an event published at the very instant a connection opens, closes, or starts or
stops being wanted, counts as published just after it: one at the instant of an open
reaches the new connection, one at the instant of a close does not reach the closing one.
(A process per stream ordered such ties by when each side had been scheduled.)
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

import simpy
from simpy.events import NORMAL, Event

from ...config.pricing import Pricing
from ...config.tiers import Tier
from ...config.websockets import StreamClient, StreamSource, WebsocketSettings
from ...core.draws import BlockDraws
from ...core.rng import stream
from ...core.vocabulary import CLOSE_KINDS, OK, STREAM_API, Rng
from ...policy.admission import Admission
from ...policy.limiter import OK as LIM_OK
from ...policy.limiters import Limiter
from ...policy.retry import backoff_s
from ...policy.slots import SlotPool, stale_expiry_s, summed_series
from ...workload.arrivals import arrival_times
from .publish import PublishTimes
from .records import HandshakeSink, WebsocketsResult, WsRecords

CLEAN, UNCLEAN, EXHAUSTED, END = range(len(CLOSE_KINDS))  # ``sessions["close_kind"]`` codes
_BLOCK = 1024
_NAN = math.nan
_W_END, _W_SESSION, _W_DROP = 0, 1, 2  # why a live connection's wait ended (ties: this order)


class _Stream(Event):
    """One stream's publishing: its times, live connections and whether a publish event
    is scheduled (``active``). The stream is itself the SimPy event of its next publish
    (scheduled with ``env.schedule``, its handler a constant ``callbacks`` tuple): no
    Timeout per publish."""

    __slots__ = ("name", "times", "live", "cost", "active", "callbacks")
    _ok = True  # SimPy's step() reads it after the callbacks: a publish never fails

    def __init__(self, name: str, times: PublishTimes, cost: float) -> None:
        self.name, self.times, self.cost = name, times, cost
        self.live: dict[_Conn, None] = {}
        self.active = False


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
    environment has reached ``duration_s``. Nothing happens at or after ``duration_s``.

    The accounts: ``admissions`` lists each account's
    :class:`~sim.policy.admission.Admission` (its limiter, slot pool, connect and publish
    prices and the handshake decision, assembled once by the tier's run) and
    ``client_account`` each client's account index (-1: its key is no account's, 401);
    a client's handshakes and billed deliveries draw on its account. Without them, one
    account is built from ``limiter``, ``tier`` and ``pricing``, and ``key_valid`` says
    which clients' keys are its.

    ``handshakes``: where each handshake goes as it happens (a tier's run passes a
    :class:`~sim.model.websockets.records.RecorderHandshakes`); by default the model keeps a
    :class:`~sim.model.websockets.records.HandshakeLog`, returned in the result.
    """

    def __init__(self, env: simpy.Environment, limiter: Limiter, tier: Tier,
                 clients: list[StreamClient], settings: WebsocketSettings, pricing: Pricing,
                 key_valid: Callable[[str], bool] | None, seed: int, duration_s: float, *,
                 day_offset_s: float = 0.0, admissions: list[Admission] | None = None,
                 client_account: list[int] | None = None,
                 handshakes: HandshakeSink | None = None) -> None:
        names = [c.name for c in clients]
        if len(set(names)) != len(names):
            raise ValueError("stream clients: expected unique names")
        self.env, self.limiter, self.tier = env, limiter, tier
        self.clients, self.settings, self.seed = list(clients), settings, int(seed)
        self.duration_s, self.day_offset_s = float(duration_s), float(day_offset_s)
        if admissions is None:
            admissions = [Admission(
                tier, pricing, limiter, SlotPool(tier.ws_cap, settings.retry_after_live_s),
                publish_cu={s: float(pricing.websocket.publish_cu.get(s, 0.0))
                            if settings.source(s).billed else 0.0 for s in STREAM_API})]
            client_account = [0 if key_valid(c.key) else -1 for c in clients]
        self._admissions = list(admissions)
        self.pools = [a.slots for a in admissions]
        self._limiters = [a.limiter for a in admissions]
        self._acct = list(client_account)  # by client; -1: no account
        # One pricing for every account: the first account's prices are every account's.
        self._connect_cu = admissions[0].connect_cu
        used = list(dict.fromkeys(c.stream for c in clients))
        self._sources: dict[str, StreamSource] = {s: settings.source(s) for s in used}
        self._publish_cu = {s: admissions[0].publish_cu.get(s, 0.0) for s in self._sources}
        self._streams = {s: _Stream(s, self.publish_times(s), self._publish_cu[s])
                         for s in self._sources}
        self._close_on_exhausted = settings.on_exhausted == "close"
        self._to_publish = (self._publish,)
        self._active: dict[_Conn, None] = {}  # connections currently wanted
        self._drop_all = [tuple(sorted(c.faults.drop_all_at_s)) for c in clients]
        self.records = WsRecords(len(clients), handshakes)
        self._started = False
        self._result: WebsocketsResult | None = None

    def publish_times(self, name: str) -> PublishTimes:
        """Stream ``name``'s publish times, from the start (the same sequence each call)."""
        return PublishTimes(self._sources[name], stream(self.seed, Rng.WS, Rng.PUBLISH, name),
                            self.duration_s, self.day_offset_s)

    @property
    def pool(self) -> SlotPool:
        """The first account's slot pool (the only one with a single account)."""
        return self.pools[0]

    @property
    def cu_connect(self) -> float:
        """Connect CU spent so far."""
        return self.records.cu_connect

    @property
    def cu_publish(self) -> float:
        """Publish CU spent so far."""
        return self.records.cu_publish

    # -- processes -------------------------------------------------------------------

    def start(self) -> None:
        """Create the client processes (streams publish on demand, see the module)."""
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
                if outcome == OK:
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
                        self.records.gave_up[ci] += 1
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
        times = arrival_times(c.arrival, stream(seed, *base, Rng.WS_ARRIVAL), T,
                              self.day_offset_s)
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
            if outcome == OK:
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

    def _publish(self, event) -> None:
        """A billed stream publishes one event: every live connection reserves its cost
        (one pass); one that cannot is closed or has the delivery dropped."""
        st, now = event, self.env._now
        nxt = st.times.pop()
        live, cost = st.live, st.cost
        if live:  # (a copy when deliveries may close connections, so leave ``live``)
            conns = list(live) if self._close_on_exhausted else live
            self.records.cu_publish += self._deliver(conns, now, cost)
        if live and nxt < math.inf:  # the chain goes on (as a process would sleep t - now)
            assert nxt >= now  # publish times increase (a Timeout would have checked)
            st.callbacks = self._to_publish
            self.env.schedule(st, NORMAL, nxt - now)
        else:
            st.active = False

    def _deliver(self, conns, now: float, cost: float) -> float:
        """Each connection of ``conns``, in order, reserves ``cost`` for one delivery; one
        that cannot is :meth:`_exhausted`. The CU spent."""
        lims, acct = self._limiters, self._acct
        spent = 0.0
        for conn in conns:
            if lims[acct[conn.client]].spend(now, cost) == LIM_OK:
                spent += cost
            else:
                self._exhausted(conn, now)
        return spent

    def _exhausted(self, conn: _Conn, now: float) -> None:
        """A delivery ``conn`` could not reserve: dropped, and with ``on_exhausted =
        "close"`` the connection closed (its process interrupted)."""
        conn.dropped += 1
        if self._close_on_exhausted:
            self._close(conn, now, EXHAUSTED)
            if conn.proc is not None and conn.proc.is_alive:
                conn.proc.interrupt("cu exhausted")

    def _schedule(self, st: _Stream, now: float) -> None:
        """The next publish event of ``st`` while it has live connections to bill."""
        nxt = st.times.peek() if st.live else math.inf
        st.active = nxt < math.inf
        if st.active:
            st.callbacks = self._to_publish
            self.env.schedule(st, NORMAL, max(nxt - now, 0.0))

    def _published(self, st: _Stream, now: float) -> int:
        """Events ``st`` has published before ``now`` (a scheduled chain: as processed)."""
        return st.times.count if st.active else st.times.before(now)

    # -- the service side and the bookkeeping ---------------------------------------

    def _handshake(self, conn: _Conn, now: float) -> tuple[int, float]:
        """Decide a handshake by its account's :meth:`Admission.handshake
        <sim.policy.admission.Admission.handshake>` (key, API selection, slot cap, connect
        CU); record and return (outcome, Retry-After)."""
        ci = conn.client
        acct = self._acct[ci]
        # A key of no account is refused (401) before any account's state is asked.
        decision = self._admissions[max(acct, 0)].handshake(
            now, self.clients[ci].stream, key_ok=acct >= 0)
        outcome, retry_after = decision.outcome, decision.retry_after_s
        if outcome == OK:
            self.records.cu_connect += self._connect_cu
        self.records.handshake(now, ci, conn.idx, outcome, retry_after)
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

    @staticmethod
    def _delay(policy, conn: _Conn, n: int, retry_after: float) -> float:
        """Seconds before reconnect attempt ``n`` (1 = the first after a disconnect)."""
        return backoff_s(policy, n, retry_after, conn.reconnect)

    def _want(self, conn: _Conn, now: float) -> None:
        conn.want_since, conn.lost_before = now, 0
        conn.mark = self._published(self._streams[conn.stream], now)
        self._active[conn] = None

    def _unwant(self, conn: _Conn, now: float) -> None:
        rec = self.records
        pub = self._published(self._streams[conn.stream], now)
        rec.lost_down[conn.client] += pub - conn.mark
        rec.wanted[conn.client] += now - conn.want_since
        del self._active[conn]

    def _open(self, conn: _Conn, now: float) -> None:
        st = self._streams[conn.stream]
        pub = self._published(st, now)
        lost = pub - conn.mark
        self.records.lost_down[conn.client] += lost
        conn.lost_before += lost
        conn.live, conn.t_open, conn.open_mark, conn.dropped = True, now, pub, 0
        st.live[conn] = None
        if st.cost > 0.0 and not st.active:
            self._schedule(st, self.env.now)

    def _close(self, conn: _Conn, now: float, kind: int) -> None:
        ci, st = conn.client, self._streams[conn.stream]
        pub = self._published(st, now)
        self.records.session(ci, conn.idx, conn.t_open, now, kind,
                             pub - conn.open_mark - conn.dropped, conn.dropped,
                             conn.lost_before)
        conn.live, conn.mark, conn.lost_before = False, pub, 0
        del st.live[conn]
        pool = self.pools[self._acct[ci]]
        if kind == UNCLEAN:
            pool.release_unclean(now, self._stale_expiry(conn))
        else:
            pool.release_clean(now)

    def _stale_expiry(self, conn: _Conn) -> float:
        return stale_expiry_s(self.settings.stale_expiry_s, conn.stale)

    # -- the result ------------------------------------------------------------------

    def result(self) -> WebsocketsResult:
        """Records and totals of the run (computed once, at ``duration_s``): connections
        still wanted are counted up to ``duration_s``, live ones close as ``end``."""
        if self._result is not None:
            return self._result
        if self.env.peek() < self.duration_s:
            raise RuntimeError("result() called before the run reached duration_s")
        T, rec = self.duration_s, self.records
        published = {s: st.times.before(T) for s, st in self._streams.items()}
        for conn in self._active:  # still wanted at the end of the run
            ci, pub = conn.client, published[conn.stream]
            rec.wanted[ci] += T - conn.want_since
            if conn.live:
                rec.session(ci, conn.idx, conn.t_open, T, END,
                            pub - conn.open_mark - conn.dropped, conn.dropped, conn.lost_before)
            else:
                rec.lost_down[ci] += pub - conn.mark
        by_account = [p.series(T) for p in self.pools]
        self._result = rec.result(self.clients, published, by_account,
                                  summed_series([p.series(T) for p in self.pools]))
        return self._result
