"""The websocket side of ``capsim drive``: stream clients holding connections.

Each ``[[streams]]`` client holds ``connections`` connections (closed loop): handshake
with its key; when refused, wait per its reconnect policy (at least ``[ws]
min_retry_s``) and try again; when live, read events until the session ends, a fault
drops the connection, the service closes it (CU exhausted) or the drive ends. A fault
is a clean close (close frame) with probability ``clean_close_fraction``, otherwise an
*unclean* drop: the client aborts its TCP connection without a close frame, as a
network failure would, and the service keeps the slot stale. Open-loop clients
(``arrival``) try one handshake per arrival and hold it for its session.

Every handshake is a trace row (status 101 when accepted); closes and billed events
received are sidecar events (:mod:`.record`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math

import numpy as np

from ..config.websockets import StreamClient
from ..core.rng import stream as named_stream
from ..core.vocabulary import (
    HANDSHAKE_STATUS_OUTCOME,
    MONITORING,
    MONITORING_PATH,
    SEARCH,
    STREAM_API,
    STREAMS,
    Rng,
)
from ..workload.arrivals import arrival_times
from .certs import HOSTNAMES

EXHAUSTED_CODE = 1013


def path_of(stream: str) -> str:
    """The request path of a stream's websocket."""
    return MONITORING_PATH if stream == MONITORING else "/" + stream


class _Draws:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def uniform(self) -> float:
        return float(self.rng.random())


class StreamDriver:
    """Websocket jobs of one drive (see the module docstring)."""

    def __init__(self, drive) -> None:
        self.drive = drive
        self._serial = 0
        self._publish_cu = {s: float(drive.pricing.websocket.publish_cu.get(s, 0.0))
                            for s in STREAM_API}

    def jobs(self) -> list:
        """One coroutine per connection a client wants (or per open-loop client)."""
        jobs = []
        for ci, c in enumerate(self.drive.scenario.streams):
            if c.arrival is not None:
                jobs.append(self._open_loop(ci, c))
            else:
                jobs += [self._holder(ci, c, k) for k in range(c.connections)]
        return jobs

    # -- one connection ---------------------------------------------------------------

    async def _handshake(self, c: StreamClient, rid: int):
        """Open a websocket; returns (outcome, retry_after, ws or None)."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidStatus

        d = self.drive
        api = STREAM_API[c.stream]
        hostname = HOSTNAMES[SEARCH if api == SEARCH else STREAMS]
        uri = f"wss://{hostname}:{d.target.port}{path_of(c.stream)}"
        self._serial += 1
        conn = self._serial
        t_send = d.clock.now()
        ws, status, retry_after, t_server = None, None, math.nan, math.nan
        try:
            ws = await connect(uri, ssl=d.ws_tls, server_hostname=hostname, host=d.target.ip,
                               port=d.target.port, additional_headers={"X-Api-Key": c.key},
                               open_timeout=30, ping_interval=None, close_timeout=2,
                               max_queue=None)
            status = 101
            t_server = float(ws.response.headers.get("x-capsim-t", "nan"))
        except InvalidStatus as err:
            status = err.response.status_code
            headers = err.response.headers
            if "Retry-After" in headers:
                retry_after = float(headers["Retry-After"])
            t_server = float(headers.get("x-capsim-t", "nan"))
        except (TimeoutError, InvalidHandshake, OSError) as err:
            status = None
            d.errors[type(err).__name__] += 1
        t_end = d.clock.now()
        outcome = HANDSHAKE_STATUS_OUTCOME.get(status, "other") if status is not None else "error"
        method = MONITORING_PATH if c.stream == MONITORING else c.stream
        d.recorder.attempt(
            t_s=t_send, end_s=t_end, api=api, method=method, key=c.key,
            region=c.region or d.scenario.regions[0].name, status=status,
            cu=d.pricing.websocket.connect_cu if outcome == "ok" else None, kind="handshake",
            t_server_s=t_server, source=c.name, stream=c.stream, rid=rid, attempt=1,
            conn=conn, conn_new=True, hostname=hostname, http2=False, reserve_cu=0.0,
            outcome=outcome, retry_after_s=retry_after)
        return outcome, retry_after, ws, conn

    async def _live(self, c: StreamClient, ws, conn: int, until: float,
                    drop_at: float, clean_drop: bool) -> str:
        """Read events until ``until`` (``end`` or session end) or ``drop_at`` (a fault);
        returns how the connection ended: clean, unclean, exhausted or end."""
        from websockets.exceptions import ConnectionClosed

        d = self.drive
        billed = self._publish_cu.get(c.stream, 0.0) > 0.0 and \
            d.scenario.ws.source(c.stream).billed
        stop_at = min(until, drop_at)

        async def reader() -> str:
            try:
                return await read()
            except ConnectionClosed:
                return "server-closed"

        async def read() -> str:
            async for raw in ws:
                msg = json.loads(raw)
                if "error" in msg:
                    d.recorder.event(kind="close", t_s=float(msg.get("t_s", d.clock.now())),
                                     source=c.name, stream=c.stream, conn=conn,
                                     close="exhausted")
                    with contextlib.suppress(ConnectionClosed):
                        await ws.wait_closed()
                    return "exhausted"
                if billed:
                    d.recorder.event(kind="publish", t_s=float(msg["t_s"]), source=c.name,
                                     stream=c.stream, conn=conn)
            return "server-closed"

        task = asyncio.get_running_loop().create_task(reader())
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), d.clock.wall(stop_at - d.clock.now()))
        if task.done() and not task.cancelled() and task.exception() is None:
            result = task.result()
            return "exhausted" if result == "exhausted" else "clean"
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
            await task
        t = d.clock.now()
        if drop_at <= until and not clean_drop:
            ws.transport.abort()  # a dropped network: no close frame, no TCP goodbye
            d.recorder.event(kind="close", t_s=t, source=c.name, stream=c.stream, conn=conn,
                             close="unclean")
            return "unclean"
        kind = "end" if until >= d.end_s and drop_at > until else "clean"
        d.recorder.event(kind="close", t_s=t, source=c.name, stream=c.stream, conn=conn,
                         close=kind)
        with contextlib.suppress(Exception):
            await ws.close()
        return kind

    # -- clients ---------------------------------------------------------------------

    def _delay(self, c: StreamClient, draws: _Draws, n: int, retry_after: float) -> float:
        p = c.reconnect
        if p.policy == "immediate":
            return 0.0
        if p.policy == "fixed":
            return p.delay_s
        if p.policy == "retry-after" and not math.isnan(retry_after):
            return retry_after + p.jitter_s * draws.uniform()
        return draws.uniform() * min(p.cap_s, p.base_s * 2.0 ** min(n - 1, 60))

    async def _holder(self, ci: int, c: StreamClient, k: int) -> None:
        d, clock = self.drive, self.drive.clock
        seed = d.scenario.seed
        base = (Rng.LIVE, Rng.DRIVE, Rng.WS, c.name, k)
        faults = _Draws(named_stream(seed, *base, Rng.FAULTS))
        reconnect = _Draws(named_stream(seed, *base, Rng.RECONNECT))
        session_rng = named_stream(seed, *base, Rng.SESSION)
        gap_rng = named_stream(seed, *base, Rng.GAP)
        drops = sorted(d.start_s + t for t in c.faults.drop_all_at_s)
        min_retry = d.scenario.ws.min_retry_s
        await clock.sleep_until(d.start_s)
        rid = 0
        while clock.now() < d.end_s:
            session_end, failures = d.end_s, 0
            if c.session is not None:
                session_end = min(d.end_s, clock.now() + float(c.session.sample(session_rng, 1)[0]))
            while clock.now() < session_end:
                rid += 1
                outcome, retry_after, ws, conn = await self._handshake(c, rid)
                now = clock.now()
                if outcome == "ok":
                    failures = 0
                    drop_at = math.inf
                    mtbd = c.faults.mean_time_between_drops_s
                    if mtbd is not None:
                        drop_at = now - mtbd * math.log1p(-faults.uniform())
                    upcoming = [t for t in drops if t > now]
                    if upcoming:
                        drop_at = min(drop_at, upcoming[0])
                    frac = c.faults.clean_close_fraction
                    clean = frac >= 1.0 or (frac > 0.0 and faults.uniform() < frac)
                    ended = await self._live(c, ws, conn, session_end, drop_at, clean)
                    if ended in ("end",):
                        return
                    delay = self._delay(c, reconnect, 1, math.nan)
                else:
                    failures += 1
                    if c.reconnect.max_attempts is not None and \
                            failures >= c.reconnect.max_attempts:
                        return
                    delay = max(self._delay(c, reconnect, failures + 1, retry_after), min_retry)
                if clock.now() + delay >= session_end:
                    break
                await clock.sleep(delay)
            if c.session is None:
                return
            gap = float(c.gap.sample(gap_rng, 1)[0])
            if clock.now() + gap >= d.end_s:
                return
            await clock.sleep(gap)

    async def _open_loop(self, ci: int, c: StreamClient) -> None:
        d, clock = self.drive, self.drive.clock
        seed = d.scenario.seed
        base = (Rng.WS, Rng.CLIENT, c.name)
        times = arrival_times(c.arrival, named_stream(seed, *base, Rng.WS_ARRIVAL),
                             d.scenario.duration_s, d.scenario.day_offset_s)
        lengths = c.session.sample(named_stream(seed, *base, Rng.SESSION), times.size)

        async def session(rid: int, t: float, length: float) -> None:
            outcome, _, ws, conn = await self._handshake(c, rid)
            if outcome == "ok":
                await self._live(c, ws, conn, min(d.end_s, d.start_s + t + length), math.inf,
                                 True)

        tasks = []
        for rid, (t, length) in enumerate(zip(times.tolist(), lengths.tolist(), strict=True)):
            await clock.sleep_until(d.start_s + t)
            tasks.append(asyncio.get_running_loop().create_task(session(rid, t, length)))
        if tasks:
            await asyncio.gather(*tasks)
