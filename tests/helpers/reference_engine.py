"""A readable reference of the engine's HTTP side: one SimPy process per logical request
(open loop) or per worker (closed loop).

:class:`sim.model.engine.TierRun` is fast: a request is its own event, pushed onto SimPy's
heap by hand, with tables precomputed per (source, key, method). This is the same model
written the plain way -- a generator per request that sleeps with ``env.timeout`` and
asks the policy objects in the service's order (:data:`sim.policy.admission.ORDER`) --
so a test can run both on a small scenario and compare them attempt for attempt.

The life of a request, as the engine's module doc draws it::

    sleep until t_first
    repeat:
        pace (the client's token bucket), get a stream of the pool (now, after a new
        connection opens, or queued until one frees; 430 if the account refuses)
        travel rtt/2; the service decides (ORDER: 421, 401, 402, then the limiter)
        admitted: service time, settle, reply -- done
        refused: reply; retry after the client's back-off, or give up

A closed-loop worker (``[[sources]] workers``) is one process: it starts after a uniform
fraction of one mean think time, then, while the run is on, draws its next request from
its own streams, lives it as above (retries included), and sleeps rtt/2 (the reply's
way back) plus a think time drawn from its own think stream.

Same inputs (the plan's demand, its random streams) and the same policy objects
(limiter, account connections, client pools, retry deciders, pacers), so the outcomes
and times must match the engine's; times to float rounding (the engine adds delays in
another order). A retry budget counts each logical request when it is sent (the
documented "requests so far"). What it leaves out: websockets.
"""

from __future__ import annotations

import itertools
import math

import simpy

from sim.config.tiers import APIS, RPC, Tier
from sim.core.rng import stream
from sim.core.vocabulary import CONN_430, OK, OUTCOMES, Rng
from sim.model.accounts import build_accounts
from sim.model.transport import QUEUED, REFUSED, ClientPool
from sim.policy.admission import ORDER
from sim.policy.connections import AccountConnections
from sim.policy.pacing import TokenBucket
from sim.policy.retry import RetryDecider
from sim.workload.demand import Plan


def run_reference(plan: Plan, tier: Tier) -> tuple[list[dict], list[dict]]:
    """Attempt rows and request rows (dicts named as the engine's columns) of ``tier``'s
    run of ``plan``'s open-loop demand."""
    sc, tab = plan.scenario, plan.tables
    if sc.streams:
        raise ValueError("the reference engine runs HTTP sources only")
    env = simpy.Environment()
    accounts = build_accounts(plan, tier)
    half_rtt = (tab.region_rtt_s / 2).tolist()
    clients = [sc.clients[src.client] for src in sc.sources]
    deciders = [RetryDecider(c.retry, stream(sc.seed, Rng.SOURCE, src.name, Rng.RETRY))
                for c, src in zip(clients, sc.sources, strict=True)]
    pacers = [TokenBucket(c.pacing.rate_cu_per_s, c.pacing.burst_cu) if c.pacing else None
              for c in clients]
    attempts: list[dict] = []
    requests: list[dict] = []
    pools: dict[tuple[int, int], ClientPool] = {}
    closed_ids = itertools.count(plan.open_count)  # in send order, after the open loop's
    no_account = AccountConnections.unlimited()

    def stream_ready(event, start, conn, since):  # a queued request got its stream
        event.succeed((start, conn, since))

    def pool_of(source: int, region: int) -> ClientPool:
        if (source, region) not in pools:
            client = clients[source]
            key_account = tab.key_account[tab.keys.index(sc.sources[source].key)]
            # A key of no account: its connections belong to none (spec 8.4, per account).
            pools[source, region] = ClientPool(
                accounts[key_account].connections if key_account >= 0 else no_account,
                tab.regions[region], env,
                rtt_s=2 * half_rtt[region],
                max_streams=(client.http.max_streams_per_conn
                             if client.http_version == "2" else 1),
                max_connections=client.http.max_connections,
                connect_rtts=client.http.connect_rtts,
                idle_timeout_s=client.http.idle_timeout_s, reuse=client.http.reuse,
                on_ready=stream_ready)
        return pools[source, region]

    def admit(source: int, key: int, method: int, now: float, reserve: float,
              actual: float):
        """The service's decision at ``now``: (outcome, Retry-After, phantom, reservation,
        limiter)."""
        acct = int(tab.key_account[key])
        api = APIS[tab.method_api[method]]
        client = clients[source]
        refused = ORDER.http_before_limiter(
            needs_h2=ORDER.needs_h2(tab.methods[method], api),
            h2_sni=client.http_version == "2" and client.sni,
            key_ok=acct >= 0, api_in_tier=acct >= 0 and accounts[acct].tier.includes(api))
        if refused is not None:
            return refused, math.nan, False, None, None
        limiter = accounts[acct].limiter
        booked = limiter.reserve(now, reserve, actual)
        outcome = ORDER.http_limiter(booked, rpc=api == RPC)
        retry_after = (float(limiter.retry_after(now)) if outcome in ORDER.WINDOW_RETRY_AFTER
                       else math.nan)
        return outcome, retry_after, booked.phantom, booked, limiter

    def request(rid, t_first, source, method, key, region, reserve, actual, service_s):
        """An open-loop request: sleep until it is sent, then live it."""
        yield env.timeout(t_first - env.now)
        deciders[source].on_request()  # the retry budget grows with requests sent so far
        yield from attempts_of(rid, source, method, key, region, reserve, actual, service_s)

    def attempts_of(rid, source, method, key, region, reserve, actual, service_s):
        """A logical request sent now, attempt after attempt until its final outcome;
        it returns at the service's last reply (the client has it rtt/2 later)."""
        h = half_rtt[region]
        t_first = env.now
        attempt, t_send = 1, t_first
        retry_on = {OUTCOMES.index(o) for o in clients[source].retry.retry_on
                    if o in OUTCOMES}
        while True:
            pacer = pacers[source]
            if pacer is not None:
                wait = pacer.delay(env.now, reserve)
                if wait > 0.0:
                    yield env.timeout(wait)
            now = env.now
            pool = pool_of(source, region)
            start, conn = pool.acquire(now)
            if start == QUEUED:
                ready = env.event()
                pool.enqueue(ready, now)
                start, conn, now = yield ready  # ``now``: since when it waited
            if start == REFUSED:
                stream_wait = 0.0
                yield env.timeout(h)
                outcome, retry_after, phantom, booked = CONN_430, math.nan, False, None
            else:
                stream_wait = start - now
                yield env.timeout(start - env.now + h)
                outcome, retry_after, phantom, booked, limiter = admit(
                    source, key, method, env.now, reserve, actual)
            if outcome == OK:
                yield env.timeout(service_s)
                limiter.settle(env.now, booked, reserve, actual)
            t_back = env.now + h
            if conn is not None:
                conn.release_at(t_back)
            billed = outcome == OK
            attempts.append(dict(
                request_id=rid, attempt=attempt, source=source, method=method, key=key,
                region=region, t_send=t_send, t_end=t_back, outcome=outcome,
                cu_reserved=reserve if billed else 0.0, cu_settled=actual if billed else 0.0,
                retry_after_s=retry_after, phantom=phantom, stream_wait_s=stream_wait))
            wait = None
            if outcome in retry_on:
                wait = deciders[source].delay(
                    attempt, None if math.isnan(retry_after) else retry_after)
            if wait is None:
                requests.append(dict(request_id=rid, source=source, method=method, key=key,
                                     t_first=t_first, t_end=t_back, outcome=outcome,
                                     attempts=attempt))
                return
            attempt += 1
            t_send = t_back + wait
            yield env.timeout(h + wait)

    def worker(source: int, number: int):
        """A closed-loop worker: send a request, wait for its final reply (retries
        included), think, repeat until the run's end."""
        src = sc.sources[source]
        key, region = tab.keys.index(src.key), tab.regions.index(sc.region_of(src))
        drawer = plan.drawer_for(source, number)  # the worker's own request streams
        think_rng = stream(sc.seed, Rng.SOURCE, src.name, Rng.WORKER, number, Rng.THINK)
        # Workers start spread over one mean think time, not all at t = 0.
        yield env.timeout(think_rng.random() * src.workers.think.mean)
        while env.now < sc.duration_s:
            method, _items, reserve, actual, service_s = (
                c.item() for c in drawer.draw(1))
            deciders[source].on_request()
            yield from attempts_of(next(closed_ids), source, method, key, region, reserve,
                                   actual, service_s)
            think = src.workers.think.sample(think_rng, 1).item()
            yield env.timeout(half_rtt[region] + think)  # the reply travels, then a pause

    rid = 0
    for block in plan.demand_blocks():
        cols = (block.t, block.source, block.method, block.key, block.region, block.reserve,
                block.actual, block.service_s)
        for row in zip(*(c.tolist() for c in cols), strict=True):
            env.process(request(rid, *row))
            rid += 1
    for source in plan.closed_sources:
        for number in range(sc.sources[source].workers.count):
            env.process(worker(source, number))
    env.run()
    return attempts, requests
