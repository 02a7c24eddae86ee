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

from pathlib import Path

import numpy as np

from ..config.scenario import Method, Source
from ..core.errors import CapsimError
from ..core.pseudonyms import pseudonym
from ..core.rng import stream
from ..core.vocabulary import SIZE_METHOD, Rng
from .method_map import apply_method_map, check_targets, describe

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


def load_source_trace(src: Source, index: int, loaded, notes: list[str] | None = None):
    """Load a trace source's rows (a :class:`ReplayTrace`), recorded RPC methods renamed
    by ``replay.method_map`` (:mod:`.method_map`); what became of each recorded method
    goes to ``notes``."""
    from ..traces.replay import load_replay

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
    """Every key pseudonym the traces use (they were the account's keys when recorded)."""
    return [pseudonym(k) for rt in traces for k in rt.key_categories]
