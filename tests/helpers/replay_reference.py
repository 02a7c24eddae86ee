"""The demand of a trace source as capsim computed it before replay streamed: the whole
trace loaded in memory (:func:`sim.traces.replay.load_replay`), renamed by the method map,
then turned into demand columns row by row. Tests hold the streamed demand to it.

(The code of ``sim.workload.replay_source`` and ``apply_method_map`` as they were, kept
here as the reference.) The rows come from ``load_replay`` as it is now, so the reference
follows the current recorded-retry rule (one refusal explains one row without a body
hash); ``tests/unit/traces/test_trace_recorded_retries.py`` holds that rule to a
brute-force search.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sim.config.scenario import Method, Source
from sim.core.errors import CapsimError
from sim.core.pseudonyms import pseudonym
from sim.core.rng import stream
from sim.core.vocabulary import SIZE_METHOD, Rng
from sim.workload.method_map import WILDCARD, check_targets, describe
from sim.workload.replay_source import trace_path

_CU_DECIMALS = 6


def apply_method_map(rt, method_map: dict[str, str]) -> tuple[object, list[tuple]]:
    """``(trace with RPC methods renamed, [(recorded, target or None, rule, rows)])``.

    ``rule`` is ``"exact"``, ``"*"`` or ``"kept"``; ``target`` None means kept.
    """
    rpc_code = rt.api_categories.index("rpc")
    rpc_rows = rt.api == rpc_code
    codes, counts = np.unique(rt.method[rpc_rows], return_counts=True)
    listing = []
    rename: dict[int, str] = {}
    for code, n in zip(codes.tolist(), counts.tolist(), strict=True):
        name = rt.method_categories[code]
        if name in method_map:
            target, rule = method_map[name], "exact"
        elif WILDCARD in method_map:
            target, rule = method_map[WILDCARD], WILDCARD
        else:
            target, rule = None, "kept"
        listing.append((name, target, rule, n))
        if target is not None and target != name:
            rename[code] = target
    if not rename:
        return rt, listing
    # rows of other APIs keep their category even when it shares a name with an RPC one
    old = list(rt.method_categories)
    names = sorted(set(old) | set(rename.values()))
    index = {name: i for i, name in enumerate(names)}
    keep_code = np.array([index[name] for name in old], dtype=np.int64)
    new_code = keep_code.copy()
    for code, target in rename.items():
        new_code[code] = index[target]
    method = np.where(rpc_rows, new_code[rt.method], keep_code[rt.method])
    return dataclasses.replace(rt, method=method.astype(rt.method.dtype, copy=False),
                               method_categories=tuple(names)), listing


def load_source_trace(src: Source, index: int, loaded, notes: list[str] | None = None):
    """Load a trace source's rows (a :class:`ReplayTrace`), recorded RPC methods renamed
    by ``replay.method_map`` (:mod:`.method_map`); what became of each recorded method
    goes to ``notes``."""
    from sim.traces.replay import load_replay

    sc = loaded.scenario
    r = src.replay
    check_targets(r.method_map, set(sc.methods), loaded.pricing.rpc.method_cu, loaded.path,
                  index)
    rt = load_replay(
        trace_path(src, index, loaded.path), speed=r.speed, load_multiplier=r.load_multiplier,
        phase_shift_s=r.phase_shift_s, time_range_s=r.time_range_s,
        drop_recorded_retries=r.drop_recorded_retries,
        rng=stream(sc.seed, Rng.SOURCE, src.name, Rng.REPLAY))
    rt, listing = apply_method_map(rt, r.method_map)
    if notes is not None:
        notes += describe(src.name, listing, r.method_map, set(sc.methods),
                          loaded.pricing.rpc.cost)
    return rt


def extra_methods(traces: list, known: set[str]) -> dict[str, Method]:
    """Methods a trace uses that the scenario does not declare (RPC, default service time)."""
    extra: dict[str, Method] = {}
    for rt in traces:
        for code in np.unique(rt.method[rt.api != rt.api_categories.index("streams")]):
            name = rt.method_categories[code]
            api = "search" if name == SIZE_METHOD else "rpc"
            if name not in known and name not in extra:
                extra[name] = Method(api=api)
    return extra


def trace_columns(src: Source, index: int, rt, tables, loaded, methods: dict[str, Method],
                  notes: list[str]) -> tuple[np.ndarray, ...]:
    """Demand columns (t, source, method, key, region, items, reserve, actual, service_s)."""
    sc, pricing = loaded.scenario, loaded.pricing
    streams_code = rt.api_categories.index("streams")
    keep = (rt.api != streams_code) & (rt.t_s < sc.duration_s)
    n_ws = int((rt.api == streams_code).sum())
    n_late = int(((rt.api != streams_code) & (rt.t_s >= sc.duration_s)).sum())
    if n_ws:
        notes.append(f"source {src.name!r}: {n_ws} websocket handshake row(s) of the trace "
                     "not replayed (model websockets with [[streams]])")
    if n_late:
        notes.append(f"source {src.name!r}: {n_late} trace row(s) after the scenario's "
                     "duration not replayed")
    if rt.dropped_retries:
        notes.append(f"source {src.name!r}: {rt.dropped_retries} recorded retries dropped; "
                     "the simulated clients' retry policy produces retries")
    t = rt.t_s[keep]
    n = len(t)
    method_names = [rt.method_categories[c] for c in rt.method[keep]]
    method = np.array([tables.methods.index(m) for m in method_names], dtype=np.int16)
    key_names = [rt.key_categories[c] for c in rt.key[keep]]
    key = np.array([tables.keys.index(k) for k in key_names], dtype=np.int16)
    default_region = tables.regions.index(sc.region_of(src))
    region_map = {i: tables.regions.index(r) if r in tables.regions else default_region
                  for i, r in enumerate(rt.region_categories)}
    unknown = sorted(set(rt.region_categories) - set(tables.regions))
    if unknown:
        notes.append(f"source {src.name!r}: trace regions {unknown} not in the scenario; "
                     f"replayed from {sc.region_of(src)!r}")
    region = np.array([region_map.get(int(c), default_region) for c in rt.region[keep]],
                      dtype=np.int16)
    items = rt.items[keep].astype(np.int32)
    recorded_cu = rt.cu[keep]
    gas = rt.gas_used[keep]
    profiles = rt.profiles[keep]
    reserve = np.zeros(n)
    actual = np.zeros(n)
    rng = stream(sc.seed, Rng.SOURCE, src.name, Rng.REPLAY_FILL)
    s = pricing.sizing
    weights = np.array(list(src.sizing.profiles.values()), dtype=float)
    names = list(src.sizing.profiles)
    for j, name in enumerate(method_names):
        if name == SIZE_METHOD:
            plist = profiles[j].split(",") if profiles[j] else None
            if plist is None:
                count = max(1, int(items[j]))
                plist = [names[k] for k in rng.choice(len(names), count, p=weights / weights.sum())]
            items[j] = len(plist)
            try:
                caps = [s.profile_gas_cap[p] for p in plist]
            except KeyError as err:
                raise CapsimError(f"unknown sizing profile {err.args[0]!r} in the trace; add it "
                                  "under [pricing.sizing.profile_gas_cap]",
                                  file=str(src.trace), field="profiles") from None
            reserve[j] = len(plist) * s.item_base_cu + sum(caps) * s.cu_per_gas
            if not np.isnan(recorded_cu[j]):
                actual[j] = min(recorded_cu[j], reserve[j])
            elif not np.isnan(gas[j]):
                actual[j] = min(reserve[j], len(plist) * s.item_base_cu + gas[j] * s.cu_per_gas)
            else:
                used = np.clip(src.sizing.gas_used.sample(rng, len(plist)), 0, 1) * np.array(caps)
                actual[j] = len(plist) * s.item_base_cu + used.sum() * s.cu_per_gas
        else:
            cost = recorded_cu[j] if not np.isnan(recorded_cu[j]) else pricing.rpc.cost(name)
            reserve[j] = actual[j] = cost
    service = np.empty(n)
    service_rng = stream(sc.seed, Rng.SOURCE, src.name, Rng.SERVICE)
    for m in np.unique(method):
        rows = np.flatnonzero(method == m)
        service[rows] = methods[tables.methods[m]].service_time.sample(service_rng, len(rows))
    return (t, np.full(n, index, dtype=np.int16), method, key, region, items,
            np.round(reserve, _CU_DECIMALS), np.round(actual, _CU_DECIMALS), service)


def trace_keys(traces: list) -> list[str]:
    return [pseudonym(k) for rt in traces for k in rt.key_categories]


def reference_demand(plan, index: int) -> tuple[np.ndarray, ...]:
    """Source ``index``'s demand columns the in-memory way, on ``plan``'s tables (which
    :func:`reference_tables_inputs` checks)."""
    loaded = plan.loaded
    sc = loaded.scenario
    rt = load_source_trace(sc.sources[index], index, loaded)
    extra = extra_methods([rt], set(sc.methods))
    cols = trace_columns(sc.sources[index], index, rt, plan.tables, loaded,
                         {**sc.methods, **extra}, [])
    t = cols[0]
    if len(t) > 1 and np.any(t[1:] < t[:-1]):
        order = np.argsort(t, kind="stable")
        cols = tuple(c[order] for c in cols)
    return cols


def reference_notes_and_tables(loaded):
    """(notes, extra methods, trace keys) of the trace sources, the in-memory way."""
    sc = loaded.scenario
    notes: list[str] = []
    traces = {i: load_source_trace(src, i, loaded, notes) for i, src in enumerate(sc.sources)
              if src.trace is not None}
    extra = extra_methods(list(traces.values()), set(sc.methods))
    return notes, traces, extra, trace_keys(list(traces.values()))
