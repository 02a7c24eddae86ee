"""A recorded trace as a demand source (``[[sources]] trace = "file.parquet"``).

The trace (the canonical trace table) is loaded with :func:`sim.traces.replay.load_replay`
(speed, load multiplier, phase shift, time range, recorded retries dropped) and its rows
become open-loop logical requests at their recorded times, ``t_s = 0`` being the
scenario's start. Recorded RPC methods are renamed by ``replay.method_map`` first
(:mod:`.method_map`). Recorded CU and gas used are used where present, else the pricing and
the source's sizing distributions fill them in; service times are drawn per method.
Websocket handshakes in a trace are not replayed as HTTP requests (model them with
``[[streams]]``); rows past the scenario's duration are left out. Both are counted in
the report's notes, never dropped silently.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path

import numpy as np

from ..config.scenario import Method, Source
from ..core.errors import CapsimError
from ..core.pseudonyms import pseudonym
from ..core.rng import stream
from ..core.vocabulary import APIS, SIZE_METHOD, Rng
from .load import scale_scenario
from .method_map import WILDCARD, check_targets, describe
from .replay_scaling import replay_scaling, stacking_note

_CU_DECIMALS = 6


def trace_path(src: Source, index: int, scenario_path: str) -> Path:
    """The trace file, relative to the scenario file's folder unless absolute."""
    path = Path(src.trace)
    if not path.is_absolute() and not scenario_path.startswith("<"):
        path = Path(scenario_path).parent / path
    if not path.is_file():
        raise CapsimError("trace file not found", file=scenario_path,
                          field=f"sources[{index}].trace")
    return path


class TraceScan:
    """One pass over a trace source (:class:`~sim.traces.replay.ReplayStream`): what the
    plan needs before the run -- the methods, keys and regions the replayed rows use, the
    rows per recorded method, what is left out -- without keeping the rows."""

    def __init__(self, src: Source, index: int, loaded) -> None:
        from ..traces.replay import ReplayStream

        sc = loaded.scenario
        r = src.replay
        self.src, self.index, self.duration_s = src, index, sc.duration_s
        self.method_map = r.method_map
        self.stream = ReplayStream(
            trace_path(src, index, loaded.path), speed=r.speed,
            load_multiplier=r.load_multiplier, phase_shift_s=r.phase_shift_s,
            time_range_s=r.time_range_s, drop_recorded_retries=r.drop_recorded_retries,
            rng=stream(sc.seed, Rng.SOURCE, src.name, Rng.REPLAY),
            scaling=replay_scaling(src, sc, index, loaded.path))
        rpc, streams = APIS.index("rpc"), APIS.index("streams")
        self.rpc_rows = _Counts()  # rows per raw method code, RPC rows
        self.other_rows = _Counts()  # the same, rows of other APIs but streams
        self.kept_rpc = _Counts()  # replayed rows (not streams, before the end) by method
        self.kept_other = _Counts()
        # the same without a recorded cu: the rows that reserve their method's price
        self.priced_rpc = _Counts()
        self.priced_other = _Counts()
        self.keys = _Counts()
        self.regions = _Counts()
        self.n_ws = self.n_late = 0
        # replayed rows' first and last times; copy 0 (the recording once, or its loops):
        # rows and first and last times, whatever the duration (.replay_scaling's warnings)
        self.first_s, self.last_s = math.inf, -math.inf
        self.copy0_rows, self.copy0_first_s, self.copy0_last_s = 0, math.inf, -math.inf
        self.sized_profiles: dict[int, None] = {}  # replayed sizing rows' lists, first seen
        sized_other = _Lut(lambda name: name == SIZE_METHOD)
        sized_rpc = _Lut(lambda name: self.mapped(name) == SIZE_METHOD)
        for ch in self.stream.chunks():
            api, method = ch["api"], ch["method"]
            is_rpc, is_ws = api == rpc, api == streams
            other = ~is_rpc & ~is_ws
            kept = ~is_ws & (ch["t_s"] < self.duration_s)
            self.n_ws += int(is_ws.sum())
            self.n_late += int((~is_ws).sum() - kept.sum())
            t_kept = ch["t_s"][kept]
            if len(t_kept):
                self.first_s = min(self.first_s, float(t_kept[0]))
                self.last_s = max(self.last_s, float(t_kept[-1]))
            t0 = ch["t_s"][~is_ws & (ch["copy"] == 0)]
            if len(t0):
                self.copy0_rows += len(t0)
                self.copy0_first_s = min(self.copy0_first_s, float(t0[0]))
                self.copy0_last_s = max(self.copy0_last_s, float(t0[-1]))
            self.rpc_rows.add(method[is_rpc])
            self.other_rows.add(method[other])
            self.kept_rpc.add(method[kept & is_rpc])
            self.kept_other.add(method[kept & other])
            no_cu = np.isnan(ch["cu"])
            self.priced_rpc.add(method[kept & is_rpc & no_cu])
            self.priced_other.add(method[kept & other & no_cu])
            self.keys.add(ch["key"])
            self.regions.add(ch["region"][ch["region"] >= 0])
            names = self.stream.names["method"]
            sized = kept & np.where(is_rpc, sized_rpc(names)[method], sized_other(names)[method])
            codes = ch["profiles"][sized]
            codes = codes[codes >= 0]
            if len(codes):
                first = np.unique(codes, return_index=True)[1]
                self.sized_profiles.update(dict.fromkeys(codes[np.sort(first)].tolist()))
        self.dropped_retries = self.stream.dropped_retries
        names = self.stream.names
        self.method_names = names["method"]
        self.key_names = sorted(names["key"][c] for c in self.keys.used())
        self.region_names = sorted(names["region"][c] for c in self.regions.used())
        self.profile_names = names["profiles"]

    def mapped(self, name: str) -> str:
        """The name an RPC method is replayed as (``replay.method_map``)."""
        target = self.method_map.get(name, self.method_map.get(WILDCARD))
        return name if target is None else target

    def listing(self) -> list[tuple]:
        """Per recorded RPC method: ``(recorded, target or None, rule, rows)`` (see
        :func:`~sim.workload.method_map.apply_method_map`), by name."""
        out = []
        for name, n in sorted((self.method_names[c], n) for c, n in self.rpc_rows.items()):
            if name in self.method_map:
                out.append((name, self.method_map[name], "exact", n))
            elif WILDCARD in self.method_map:
                out.append((name, self.method_map[WILDCARD], WILDCARD, n))
            else:
                out.append((name, None, "kept", n))
        return out

    def replayed_methods(self) -> list[str]:
        """Methods of the rows replayed as HTTP requests (any time), by name."""
        return sorted({self.mapped(self.method_names[c]) for c, _ in self.rpc_rows.items()}
                      | {self.method_names[c] for c, _ in self.other_rows.items()})


    def kept_methods(self) -> set[str]:
        """Methods of the rows replayed before the scenario's end (RPC ones renamed)."""
        return self._names(self.kept_rpc, self.kept_other)

    def priced_methods(self) -> set[str]:
        """Methods of replayed rows without a recorded cu: those reserve their method's
        price (:meth:`TraceFeed.columns`); a row with one reserves what it recorded."""
        return self._names(self.priced_rpc, self.priced_other)

    def _names(self, rpc: _Counts, other: _Counts) -> set[str]:
        return ({self.mapped(self.method_names[c]) for c, _ in rpc.items()}
                | {self.method_names[c] for c, _ in other.items()})


def methods_at_recorded_cu(loaded) -> set[str]:
    """Methods only replayed rows send, each of them with a recorded cu: their rows
    reserve what they recorded, so the method's price is never paid. Sizing always pays
    the sizing prices; a method a synthetic source sends pays its price. One pass over
    each trace (its :class:`TraceScan`, of the load-scaled scenario like the run's)."""
    sc = scale_scenario(loaded.scenario)
    traced = [(i, s) for i, s in enumerate(sc.sources) if s.trace is not None]
    if not traced:
        return set()
    if sc is not loaded.scenario:
        loaded = dataclasses.replace(loaded, scenario=sc)
    replayed, priced = set(), set()
    for i, src in traced:
        scan = scan_source_trace(src, i, loaded)
        replayed |= scan.kept_methods()
        priced |= scan.priced_methods()
    synthetic = {m for s in sc.sources if s.trace is None for m, w in s.mix.items() if w > 0}
    return replayed - priced - synthetic - {SIZE_METHOD}


class _Counts:
    """Row counts per code, growing with the codes seen."""

    def __init__(self) -> None:
        self.n = np.zeros(0, dtype=np.int64)

    def add(self, codes: np.ndarray) -> None:
        if len(codes):
            got = np.bincount(codes, minlength=len(self.n))
            got[:len(self.n)] += self.n
            self.n = got

    def used(self) -> np.ndarray:
        return np.flatnonzero(self.n)

    def items(self) -> list[tuple[int, int]]:
        return [(int(c), int(self.n[c])) for c in self.used()]


class _Lut:
    """A per-code look-up table over names, extended as codes appear."""

    def __init__(self, fn) -> None:
        self.fn, self.values = fn, []

    def __call__(self, names: list[str]) -> np.ndarray:
        self.values += [self.fn(n) for n in names[len(self.values):]]
        return np.array(self.values + [self.fn("")], dtype=bool)


def scan_source_trace(src: Source, index: int, loaded, notes: list[str] | None = None
                      ) -> TraceScan:
    """Scan a trace source (:class:`TraceScan`); what ``replay.method_map`` made of each
    recorded method goes to ``notes``."""
    sc = loaded.scenario
    check_targets(src.replay.method_map, set(sc.methods), loaded.pricing.rpc.method_cu,
                  loaded.path, index)
    scan = TraceScan(src, index, loaded)
    if notes is not None:
        notes += describe(src.name, scan.listing(), src.replay.method_map, set(sc.methods),
                          loaded.pricing.rpc.cost)
        stacked = stacking_note(scan)
        if stacked:
            notes.append(stacked)
    return scan


def extra_methods(scans: list[TraceScan], known: set[str]) -> dict[str, Method]:
    """Methods a trace uses that the scenario does not declare (RPC, default service time)."""
    extra: dict[str, Method] = {}
    for scan in scans:
        for name in scan.replayed_methods():
            api = "search" if name == SIZE_METHOD else "rpc"
            if name not in known and name not in extra:
                extra[name] = Method(api=api)
    return extra


class TraceFeed:
    """A trace source's demand columns (t, source, method, key, region, items, reserve,
    actual, service_s), read from the file in time order a piece at a time
    (:meth:`reader`): recorded CU and gas used where present, else the pricing and the
    source's sizing distributions fill them in; service times drawn per method."""

    def __init__(self, scan: TraceScan, tables, loaded, methods: dict[str, Method],
                 notes: list[str]) -> None:
        sc, pricing = loaded.scenario, loaded.pricing
        src = scan.src
        self.scan, self.index, self.tables, self.pricing = scan, scan.index, tables, pricing
        if scan.n_ws:
            notes.append(f"source {src.name!r}: {scan.n_ws} websocket handshake row(s) of the "
                         "trace not replayed (model websockets with [[streams]])")
        if scan.n_late:
            notes.append(f"source {src.name!r}: {scan.n_late} trace row(s) after the "
                         "scenario's duration not replayed")
        if scan.dropped_retries:
            notes.append(f"source {src.name!r}: {scan.dropped_retries} recorded retries "
                         "dropped; the simulated clients' retry policy produces retries")
        default_region = tables.regions.index(sc.region_of(src))
        unknown = sorted(set(scan.region_names) - set(tables.regions))
        if unknown:
            notes.append(f"source {src.name!r}: trace regions {unknown} not in the scenario; "
                         f"replayed from {sc.region_of(src)!r}")
        for code in scan.sized_profiles:  # the first unknown one, in replay order
            for name in scan.profile_names[code].split(","):
                if name not in pricing.sizing.profile_gas_cap:
                    raise CapsimError(f"unknown sizing profile {name!r} in the trace; add it "
                                      "under [pricing.sizing.profile_gas_cap]",
                                      file=str(src.trace), field="profiles")
        # codes of names no replayed row uses (rows left out) map to -1, never read
        names = scan.method_names
        where = {m: i for i, m in enumerate(tables.methods)}
        self.method_rpc = np.array([where.get(scan.mapped(n), -1) for n in names],
                                   dtype=np.int16)
        self.method_other = np.array([where.get(n, -1) for n in names], dtype=np.int16)
        where = {k: i for i, k in enumerate(tables.keys)}
        self.key = np.array([where.get(k, -1) for k in scan.stream.names["key"]],
                            dtype=np.int16)
        self.region = np.array(
            [tables.regions.index(r) if r in tables.regions else default_region
             for r in scan.stream.names["region"]] + [default_region], dtype=np.int16)
        self.rpc_cost = np.array([pricing.rpc.cost(m) for m in tables.methods])
        self.size_method = (tables.methods.index(SIZE_METHOD) if SIZE_METHOD in tables.methods
                            else -1)
        self.count = 0
        per_method: dict[int, int] = {}
        for lut, counts in ((self.method_rpc, scan.kept_rpc), (self.method_other,
                                                               scan.kept_other)):
            for c, n in counts.items():
                per_method[int(lut[c])] = per_method.get(int(lut[c]), 0) + n
                self.count += n
        # Service times: one stream for the source, drawn method by method (in the order
        # of the tables' methods) for all of a method's rows. Each method's rows draw from
        # a copy of the stream taken where that method's draws begin, so reading the rows
        # in pieces gives the same times as drawing every row at once.
        rng = stream(sc.seed, Rng.SOURCE, src.name, Rng.SERVICE)
        self.service: dict[int, tuple] = {}
        for m in sorted(per_method):
            dist = methods[tables.methods[m]].service_time
            self.service[m] = (dist, copy.deepcopy(rng))
            left = per_method[m]
            while left:
                step = min(left, 1 << 20)
                dist.sample(rng, step)
                left -= step
        self.sizing = src.sizing
        self.seed = sc.seed
        self.duration_s = sc.duration_s

    def reader(self) -> TraceReader:
        """A fresh pass over the feed's rows, in time order."""
        return TraceReader(self)

    def columns(self, ch: dict[str, np.ndarray], fill: np.random.Generator,
                service: dict[int, tuple]) -> tuple[np.ndarray, ...]:
        """Demand columns of one piece of the stream."""
        streams = APIS.index("streams")
        keep = (ch["api"] != streams) & (ch["t_s"] < self.duration_s)
        t = ch["t_s"][keep]
        n = len(t)
        is_rpc = ch["api"][keep] == APIS.index("rpc")
        raw = ch["method"][keep]
        method = np.where(is_rpc, self.method_rpc[raw], self.method_other[raw]).astype(np.int16)
        key = self.key[ch["key"][keep]]
        region = self.region[ch["region"][keep]]
        items = ch["items"][keep].astype(np.int32)
        recorded_cu = ch["cu"][keep]
        reserve = np.where(np.isnan(recorded_cu), self.rpc_cost[method], recorded_cu)
        actual = reserve.copy()
        sized = np.flatnonzero(method == self.size_method)
        if len(sized):
            self._fill_sizing(sized, ch["profiles"][keep], ch["gas_used"][keep], recorded_cu,
                              items, reserve, actual, fill)
        service_s = np.empty(n)
        for m in np.unique(method):
            rows = np.flatnonzero(method == m)
            dist, rng = service[int(m)]
            service_s[rows] = dist.sample(rng, len(rows))
        return (t, np.full(n, self.index, dtype=np.int16), method, key, region, items,
                np.round(reserve, _CU_DECIMALS), np.round(actual, _CU_DECIMALS), service_s)

    def _fill_sizing(self, sized, profiles, gas, recorded_cu, items, reserve, actual, rng):
        s = self.pricing.sizing
        weights = np.array(list(self.sizing.profiles.values()), dtype=float)
        names = list(self.sizing.profiles)
        profile_names = self.scan.profile_names
        for j in sized.tolist():
            code = int(profiles[j])
            plist = profile_names[code].split(",") if code >= 0 and profile_names[code] else None
            if plist is None:
                count = max(1, int(items[j]))
                plist = [names[k] for k in rng.choice(len(names), count, p=weights / weights.sum())]
            items[j] = len(plist)
            caps = [s.profile_gas_cap[p] for p in plist]
            reserve[j] = len(plist) * s.item_base_cu + sum(caps) * s.cu_per_gas
            if not np.isnan(recorded_cu[j]):
                actual[j] = min(recorded_cu[j], reserve[j])
            elif not np.isnan(gas[j]):
                actual[j] = min(reserve[j], len(plist) * s.item_base_cu + gas[j] * s.cu_per_gas)
            else:
                used = np.clip(self.sizing.gas_used.sample(rng, len(plist)), 0, 1) * np.array(caps)
                actual[j] = len(plist) * s.item_base_cu + used.sum() * s.cu_per_gas


class TraceReader:
    """One pass over a :class:`TraceFeed`: :meth:`until` hands out its rows by time."""

    def __init__(self, feed: TraceFeed) -> None:
        self.feed = feed
        self._chunks = feed.scan.stream.chunks(until_s=feed.duration_s)
        self._fill = stream(feed.seed, Rng.SOURCE, feed.scan.src.name, Rng.REPLAY_FILL)
        self._service = {m: (d, copy.deepcopy(rng)) for m, (d, rng) in feed.service.items()}
        self._held: tuple[np.ndarray, ...] | None = None
        self._done = False

    def until(self, end: float) -> tuple[np.ndarray, ...]:
        """Demand columns of the rows not handed out yet with ``t < end``."""
        parts = []
        while True:
            if self._held is None:
                if self._done:
                    break
                ch = next(self._chunks, None)
                if ch is None:
                    self._done = True
                    break
                self._held = self.feed.columns(ch, self._fill, self._service)
            cols = self._held
            hi = int(np.searchsorted(cols[0], end, side="left"))
            if hi < len(cols[0]):
                parts.append(tuple(c[:hi] for c in cols))
                self._held = tuple(c[hi:] for c in cols)
                break
            parts.append(cols)
            self._held = None
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return _EMPTY
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(len(parts[0])))


_EMPTY = (np.zeros(0), np.zeros(0, np.int16), np.zeros(0, np.int16), np.zeros(0, np.int16),
          np.zeros(0, np.int16), np.zeros(0, np.int32), np.zeros(0), np.zeros(0), np.zeros(0))


def trace_keys(scans: list[TraceScan]) -> list[str]:
    """Every key pseudonym the traces use (they were the account's keys when recorded)."""
    return [pseudonym(k) for scan in scans for k in scan.key_names]
