"""The request stream a run replays against every tier (common random numbers).

:func:`build_plan` turns a validated scenario into a :class:`Plan`: lookup tables
(methods, keys, regions, sources) and the open-loop demand -- one row per logical
request, columnar, in send-time order, with every random attribute drawn (method, sizing
items, CU reserved and settled, service time). :meth:`Plan.demand_blocks` draws it one
time slice at a time (:data:`SLICE_S` seconds), so memory does not grow with the run's
length; the engine and the live driver read it so.

The draws do not depend on the slicing: each source's arrivals are an
:class:`~sim.workload.arrivals.ArrivalStream`, and each of its random attributes
(method mix, sizing items, sizing profiles, gas used, the service time of each method)
has its own named stream, drawn in request order. Slicing by 60 s or taking the run
whole gives the same demand (``tests/unit/workload/test_demand_slices.py``). A recorded
trace is read from its file the same way, in time order a row group at a time
(:class:`~sim.traces.replay.ReplayStream`): :func:`build_plan` scans it once (the methods,
keys and regions it uses, its row counts), and each pass over the demand reads it again,
so memory does not grow with the trace's length either; each worker process of
``--jobs N`` reads the file itself.

Closed-loop sources cannot be drawn up front (their timing depends on the replies), so
each worker gets a :class:`RequestDrawer` on its own named streams: the k-th request of
a worker is the same on every tier, only its timing differs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from ..config.pricing import Pricing
from ..config.resolved import LoadedScenario
from ..config.scenario import Scenario, Source
from ..config.tiers import APIS
from ..core.pseudonyms import pseudonym
from ..core.rng import stream
from ..core.vocabulary import SIZE_METHOD, STREAM_API, STREAM_NAMES, Rng
from .arrivals import ArrivalStream, arrival_count
from .load import load_note, scale_scenario
from .replay_scaling import coverage
from .replay_source import TraceFeed, extra_methods, scan_source_trace, trace_keys

_CU_DECIMALS = 6  # costs are rounded so that window sums compare as on paper

#: Seconds of open-loop demand drawn per block (:meth:`Plan.demand_blocks`).
SLICE_S = 60.0


@dataclass(frozen=True)
class Tables:
    """Lookup tables shared by every tier's run; arrays index them by position."""

    methods: tuple[str, ...]
    method_api: np.ndarray  # int8 index into sim.config.tiers.APIS
    keys: tuple[str, ...]  # as written in the scenario (never written out)
    key_pseudonyms: tuple[str, ...]
    key_valid: np.ndarray  # bool: one of an account's keys
    key_account: np.ndarray  # int16 index into the scenario's account_list; -1: no account
    regions: tuple[str, ...]
    region_rtt_s: np.ndarray
    sources: tuple[str, ...]
    source_client: tuple[str, ...]


@dataclass(frozen=True)
class Demand:
    """Open-loop logical requests, one row each, sorted by ``t`` (send time, seconds)."""

    t: np.ndarray
    source: np.ndarray
    method: np.ndarray
    key: np.ndarray
    region: np.ndarray
    items: np.ndarray
    reserve: np.ndarray
    actual: np.ndarray
    service_s: np.ndarray

    def __len__(self) -> int:
        return len(self.t)


@dataclass
class Plan:
    """Everything a tier's run needs that does not depend on the tier.

    ``open_count`` is the number of open-loop requests (closed-loop request ids follow
    them); ``traces`` maps a trace source's index to its :class:`TraceFeed` (its demand
    columns, read from the file in time order as the blocks ask for them).
    """

    loaded: LoadedScenario
    tables: Tables
    open_count: int
    traces: dict[int, TraceFeed] = field(default_factory=dict)
    closed_sources: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: seconds with traffic when traces, the only demand, end before the run (else None):
    #: the allowance's hours are over them (:func:`~sim.workload.replay_scaling.coverage`)
    covered_s: float | None = None

    @property
    def scenario(self) -> Scenario:
        return self.loaded.scenario

    def demand_blocks(self, slice_s: float = SLICE_S) -> Iterator[Demand]:
        """The open-loop demand in send-time order, one block per ``slice_s`` seconds of
        the run (empty slices skipped), each drawn when asked for."""
        sc = self.scenario
        feeds: list = []
        for i, src in enumerate(sc.sources):
            if src.workers is not None:
                continue
            cache = CacheThinning.of(src, self.tables, sc.seed)
            if i in self.traces:
                feeds.append((i, None, self.traces[i].reader(), cache))
                continue
            key = self.tables.keys.index(src.key)
            region = self.tables.regions.index(sc.region_of(src))
            drawer = RequestDrawer(src, self.tables, self.loaded.pricing, sc, sc.seed)
            feeds.append((i, _arrivals(sc, src), (key, region, drawer), cache))
        k = 0
        n_slices = max(1, math.ceil(sc.duration_s / slice_s))
        while k < n_slices:
            k += 1
            end = math.inf if k == n_slices else k * slice_s
            parts = []
            for i, arrivals, feed, cache in feeds:
                if arrivals is None:  # a trace: read from its file in time order
                    part = feed.until(end)
                else:
                    key, region, drawer = feed
                    t = arrivals.until(end)
                    n = len(t)
                    method, items, reserve, actual, service = drawer.draw(n)
                    part = (t, np.full(n, i, dtype=np.int16), method,
                            np.full(n, key, dtype=np.int16), np.full(n, region, dtype=np.int16),
                            items, reserve, actual, service)
                parts.append(part if cache is None else cache.keep(part))
            block = _merge(parts)
            if len(block):
                yield block

    def drawer_for(self, source: int, worker: int) -> RequestDrawer:
        """The request drawer of one closed-loop worker, on its own named streams."""
        sc = self.scenario
        return RequestDrawer(sc.sources[source], self.tables, self.loaded.pricing, sc, sc.seed,
                             stream_name=(Rng.WORKER, worker))


class CacheThinning:
    """A source's ``cache``: drops the share of each listed method's calls its client
    answers itself, deterministically: one uniform draw per request of the source, in
    request order, from ``source/NAME/cache`` (so the slicing does not matter, and a
    call is answered by the cache on every tier or on none)."""

    def __init__(self, shares: np.ndarray, rng: np.random.Generator) -> None:
        self.shares = shares  # per method index of the tables; 0: never cached
        self.rng = rng

    @classmethod
    def of(cls, src: Source, tables: Tables, seed: int) -> CacheThinning | None:
        """The thinning of ``src`` (None: it caches nothing)."""
        if not src.cache:
            return None
        shares = np.zeros(len(tables.methods))
        for method, share in src.cache.items():
            if method in tables.methods:
                shares[tables.methods.index(method)] = share
        return cls(shares, stream(seed, Rng.SOURCE, src.name, Rng.CACHE))

    def keep(self, part: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """``part`` (demand columns, ``method`` third) without the cached calls."""
        method = part[2]
        u = self.rng.random(len(method))
        kept = u >= self.shares[method]
        return tuple(col[kept] for col in part)


def _arrivals(sc: Scenario, src: Source) -> ArrivalStream:
    return ArrivalStream(src.arrival, stream(sc.seed, Rng.SOURCE, src.name, Rng.ARRIVALS),
                         sc.duration_s, sc.day_offset_s)


class RequestDrawer:
    """Draws the random attributes of a source's requests, vectorised.

    ``draw(n)`` returns columns (method, items, reserve, actual, service_s) for ``n``
    requests: for open-loop sources slice by slice, for closed-loop workers in chunks.
    Each attribute has its own named stream (the service time one per method), drawn in
    request order, so ``draw(a)`` then ``draw(b)`` equals ``draw(a + b)``.
    """

    def __init__(self, source: Source, tables: Tables, pricing: Pricing, scenario: Scenario,
                 seed: int, stream_name: tuple = ()) -> None:
        self._mix_methods = np.array([tables.methods.index(m) for m in source.mix], dtype=np.int16)
        weights = np.array(list(source.mix.values()), dtype=float)
        self._mix_p = weights / weights.sum()
        self._tables = tables
        self._pricing = pricing
        self._sizing = source.sizing
        self._service = {m: scenario.methods[m].service_time for m in source.mix}
        base = (Rng.SOURCE, source.name, *stream_name)
        self._rng_mix = stream(seed, *base, Rng.MIX)
        self._rng_items = stream(seed, *base, Rng.SIZING, Rng.ITEMS)
        self._rng_profile = stream(seed, *base, Rng.SIZING, Rng.PROFILE)
        self._rng_gas = stream(seed, *base, Rng.SIZING, Rng.GAS)
        self._rng_service = {m: stream(seed, *base, Rng.SERVICE, m) for m in source.mix}
        self._size_idx = tables.methods.index(SIZE_METHOD) if SIZE_METHOD in tables.methods else -1
        profiles = list(self._sizing.profiles)
        p = np.array([self._sizing.profiles[k] for k in profiles], dtype=float)
        self._profile_p = p / p.sum()
        caps = np.array([pricing.sizing.profile_gas_cap[k] for k in profiles], dtype=float)
        self._profile_cap = caps
        self._rpc_cost = np.array([pricing.rpc.cost(m) if m in scenario.methods and m != SIZE_METHOD
                                   else 0.0 for m in tables.methods])

    def draw(self, n: int) -> tuple[np.ndarray, ...]:
        """Columns ``method, items, reserve, actual, service_s`` for ``n`` requests."""
        if len(self._mix_methods) == 1:
            method = np.full(n, self._mix_methods[0], dtype=np.int16)
        else:
            method = self._mix_methods[self._rng_mix.choice(len(self._mix_p), n, p=self._mix_p)]
        reserve = self._rpc_cost[method].copy()
        actual = reserve.copy()
        items = np.zeros(n, dtype=np.int32)
        sizing = np.flatnonzero(method == self._size_idx)
        if len(sizing):
            items_s, res_s, act_s = self._draw_sizing(len(sizing))
            items[sizing], reserve[sizing], actual[sizing] = items_s, res_s, act_s
        service = np.empty(n, dtype=float)
        for m in np.unique(method):
            rows = np.flatnonzero(method == m)
            name = self._tables.methods[m]
            service[rows] = self._service[name].sample(self._rng_service[name], len(rows))
        return (method, items, np.round(reserve, _CU_DECIMALS), np.round(actual, _CU_DECIMALS),
                service)

    def _draw_sizing(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pricing = self._pricing.sizing
        items = np.maximum(1, np.rint(self._sizing.items.sample(self._rng_items, n))
                           ).astype(np.int32)
        total = int(items.sum())
        profile = self._rng_profile.choice(len(self._profile_p), total, p=self._profile_p)
        cap = self._profile_cap[profile]
        used = np.clip(self._sizing.gas_used.sample(self._rng_gas, total), 0.0, 1.0) * cap
        starts = np.concatenate(([0], np.cumsum(items)[:-1]))
        reserve = items * pricing.item_base_cu + np.add.reduceat(cap, starts) * pricing.cu_per_gas
        actual = items * pricing.item_base_cu + np.add.reduceat(used, starts) * pricing.cu_per_gas
        return items, reserve, actual


def build_tables(loaded: LoadedScenario, extra_methods: dict | None = None,
                 trace_keys: list[str] = (), trace_key_owner: dict[str, str] | None = None
                 ) -> Tables:
    """Lookup tables for the scenario's methods, keys, regions and sources.

    ``trace_key_owner`` maps a recorded key to the scenario key of the source replaying
    it: the recorded key belongs to that key's account (the first account otherwise).
    """
    sc = loaded.scenario
    all_methods = {**sc.methods, **(extra_methods or {})}
    # Websocket stream paths are methods of the Streams / Search API (handshake rows).
    methods = tuple(all_methods) + STREAM_NAMES
    apis = [all_methods[m].api for m in all_methods] + [STREAM_API[n] for n in STREAM_NAMES]
    account_keys = [k for a in sc.account_list for k in a.keys]
    keys = tuple(dict.fromkeys([*account_keys, *(s.key for s in sc.sources),
                                *(c.key for c in sc.streams), *trace_keys]))
    # Keys recorded in a trace were accepted when recorded: they are an account's.
    owner = {k: i for i, a in enumerate(sc.account_list) for k in a.keys}
    for k in trace_keys:
        if k not in owner:
            owner[k] = owner.get((trace_key_owner or {}).get(k), 0)
    key_account = np.array([owner.get(k, -1) for k in keys], dtype=np.int16)
    return Tables(
        methods=methods,
        method_api=np.array([APIS.index(a) for a in apis], dtype=np.int8),
        keys=keys,
        key_pseudonyms=tuple(pseudonym(k) for k in keys),
        key_valid=key_account >= 0,
        key_account=key_account,
        regions=tuple(r.name for r in sc.regions),
        region_rtt_s=np.array([r.rtt_ms / 1000.0 for r in sc.regions]),
        sources=tuple(s.name for s in sc.sources) + tuple(c.name for c in sc.streams),
        source_client=tuple(s.client for s in sc.sources) + tuple("" for _ in sc.streams),
    )


def build_plan(loaded: LoadedScenario) -> Plan:
    """Draw the open-loop demand and set up closed-loop drawers for a scenario.

    The scenario's ``load`` is applied first (:mod:`sim.workload.load`): the plan, and so
    every tier's run, holds the scaled scenario.
    """
    scaled = scale_scenario(loaded.scenario)
    if scaled is not loaded.scenario:
        loaded = replace(loaded, scenario=scaled)
    sc = loaded.scenario
    notes: list[str] = [n for n in (load_note(sc),) if n]
    notes += [f"cache: source {src.name!r} answers {share:.4g} of its {method} calls "
              "itself (never sent, not counted as requests)"
              for src in sc.sources for method, share in src.cache.items()]
    scans = {i: scan_source_trace(src, i, loaded, notes) for i, src in enumerate(sc.sources)
             if src.trace is not None}
    extra = extra_methods(list(scans.values()), set(sc.methods))
    owners = {k: sc.sources[i].key for i, scan in scans.items() for k in trace_keys([scan])}
    tables = build_tables(loaded, extra, trace_keys(list(scans.values())), owners)
    closed = [i for i, src in enumerate(sc.sources) if src.workers is not None]
    feeds = {i: TraceFeed(scan, tables, loaded, {**sc.methods, **extra}, notes)
             for i, scan in scans.items()}
    covered_s, ends = coverage(sc, scans)
    notes += ends
    # Closed-loop request ids follow the open-loop ones: count them first (arrival
    # instants only, drawn and dropped chunk by chunk).
    open_count = sum(f.count for f in feeds.values()) + sum(
        arrival_count(src.arrival, stream(sc.seed, Rng.SOURCE, src.name, Rng.ARRIVALS),
                      sc.duration_s, sc.day_offset_s)
        for src in sc.sources if src.workers is None and src.trace is None)
    return Plan(loaded, tables, open_count, feeds, closed, notes, covered_s)


_COLUMNS = ("t", "source", "method", "key", "region", "items", "reserve", "actual", "service_s")
_DTYPES = (float, np.int16, np.int16, np.int16, np.int16, np.int32, float, float, float)


def _merge(parts: list[tuple[np.ndarray, ...]]) -> Demand:
    """One table sorted by time (stable: equal times in source order) from the sources'
    parts (``parts`` is emptied as it goes, so the peak is one copy plus a column)."""
    names, dtypes = _COLUMNS, _DTYPES
    if not parts:
        return Demand(*(np.empty(0, dtype=d) for d in dtypes))
    cols = [np.concatenate([p[j] for p in parts]).astype(dtypes[j], copy=False)
            for j in range(len(names))]
    parts.clear()
    order = np.argsort(cols[0], kind="stable")
    for j in range(len(cols)):
        cols[j] = cols[j][order]
    return Demand(*cols)
