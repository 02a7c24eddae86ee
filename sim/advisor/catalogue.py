"""The catalogue of client changes the advisor tries, each a diff of the scenario.

A :class:`Change` is one knob of the client (pace a client, change its retry policy,
move a sizing burst off the window boundaries, ...). Its settings go from the mildest
to the strongest: a discrete change lists them (:attr:`Change.values`), a continuous
one (pacing) gives a starting point and a range that :mod:`sim.advisor.search` bisects.
:meth:`Change.step` turns a setting into ``--set`` overrides (what the runs apply) and
words. A change that cannot alter the outcome under the model is not tried: it is
listed in :func:`catalogue`'s ``skipped`` with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..config.resolved import LoadedScenario
from ..config.scenario import SIZE_METHOD
from ..core.vocabulary import WINDOW_S
from ..jobs.identical import NO_HEADER, json_rpc_only

PACING_BURST_SHARE = 0.01
"""A paced client's bucket holds this share of the tier's window budget (per source):
small, so that a window sees at most ``12 s x rate + burst``."""


@dataclass(frozen=True)
class Step:
    """One setting of a change: its value, the ``--set`` overrides, and in words."""

    value: Any
    overrides: tuple[str, ...]
    words: str


@dataclass(frozen=True)
class Change:
    """One knob of the client, with its settings from the mildest to the strongest.

    ``kind`` names the catalogue entry (``pacing``, ``retry-after``, ``exponential``,
    ``fewer-attempts``, ``retry-budget``, ``burst-jitter``, ``burst-phase``,
    ``connections``, ``fewer-websockets``, ``drop``); ``target`` what it applies to
    (a client, a source or a stream). Discrete changes list ``values``; a continuous
    one (``continuous`` True) is searched between ``values[0]`` (mildest) and
    ``values[-1]`` (strongest) from ``start``.
    """

    kind: str
    target: str
    title: str
    values: tuple[Any, ...]
    continuous: bool = False
    throttles_only: bool = True  # helps only a tier whose window throttles
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        """``kind/target``: unique within a catalogue."""
        return f"{self.kind}/{self.target}"

    def step(self, value: Any, budget_cu: float | None = None) -> Step:
        """The setting ``value`` of this change as overrides and words."""
        return _STEPS[self.kind](self, value, budget_cu)

    def start(self, budget_cu: float) -> Any:
        """Where a continuous search starts for a tier of ``budget_cu`` per window."""
        if self.kind == "pacing":
            n = self.params["sources"]
            return max((budget_cu - n * _burst(budget_cu, n)) / WINDOW_S / n, 1e-3)
        if self.kind == "drop":
            return 4.0  # 1 / share: a quarter of the calls
        return self.values[0]


@dataclass(frozen=True)
class Skipped:
    """A catalogue entry not tried, and why it cannot alter the outcome."""

    title: str
    reason: str


def _burst(budget_cu: float, n_sources: int) -> float:
    return round(budget_cu * PACING_BURST_SHARE / n_sources, 3)


def catalogue(loaded: LoadedScenario, seen: tuple[str, ...] = ()
              ) -> tuple[list[Change], list[Skipped]]:
    """The changes worth trying on ``loaded``'s clients, and the ones skipped (with why);
    ``seen`` lists the billed methods a run called (what a replayed source may cache)."""
    sc = loaded.scenario
    changes: list[Change] = []
    skipped: list[Skipped] = []
    used_clients: dict[str, list[int]] = {}
    for i, src in enumerate(sc.sources):
        used_clients.setdefault(src.client, []).append(i)
    for name, indices in sorted(used_clients.items()):
        client = sc.clients.get(name)
        if client is None:
            continue
        srcs = [sc.sources[i] for i in indices]
        billed = any(_billed(loaded, s) for s in srcs)
        if not billed:
            skipped.append(Skipped(f"pace client {name!r}",
                                   "its requests are unbilled: they reserve no CU"))
        else:
            changes.append(Change("pacing", name, f"pace client {name!r}",
                                  values=(None, None), continuous=True,
                                  params={"sources": len(srcs)}))
        changes.extend(_retry_changes(loaded, name, client, srcs, skipped))
        if client.http.reuse is False or client.http.max_connections < 64:
            changes.append(Change("connections", name,
                                  f"reuse connections of client {name!r} (larger pool)",
                                  values=(max(client.http.max_connections * 2, 32),
                                          max(client.http.max_connections * 4, 64)),
                                  throttles_only=False))
    for i, src in enumerate(sc.sources):
        changes.extend(_burst_changes(i, src, skipped))
        changes.extend(_drop_changes(loaded, i, src, seen))
        if src.workers is not None:
            skipped.append(Skipped(f"cache calls of {src.name!r}",
                                   "its closed-loop workers would send their next call at "
                                   "once: the scenario's cache thins open-loop and replayed "
                                   "sources only"))
    if sc.streams:
        for i, stream in enumerate(sc.streams):
            if stream.arrival is None and stream.connections > 1:
                changes.append(Change("fewer-websockets", str(i),
                                      f"fewer websockets for {stream.name!r}",
                                      values=tuple(range(stream.connections - 1, 0, -1)),
                                      throttles_only=False,
                                      params={"name": stream.name}))
        skipped.append(Skipped("unbilled streams",
                               "which stream events are billed is the service's pricing "
                               "(websocket.publish_cu), not a setting of the client"))
    else:
        skipped.append(Skipped("fewer websockets or unbilled streams",
                               "the scenario holds no [[streams]]"))
    if any(SIZE_METHOD in s.mix for s in sc.sources if s.trace is None):
        skipped.append(Skipped("batch sizing items",
                               "POST /v1/size is charged per item (item_base_cu + gas): "
                               "batching items into fewer requests moves no CU, in the "
                               "model or the spec (8.2.2)"))
    return changes, skipped


def _billed(loaded: LoadedScenario, src) -> bool:
    """Whether ``src`` sends anything that reserves CU (a trace is assumed to)."""
    if src.trace is not None:
        return True
    return any(m == SIZE_METHOD or loaded.pricing.rpc.cost(m) > 0 for m in src.mix)


def _retry_changes(loaded, name, client, srcs, skipped) -> list[Change]:
    retry = client.retry
    out: list[Change] = []
    json_rpc = json_rpc_only(loaded.scenario, name)
    if retry.policy != "retry-after":
        if json_rpc and retry.policy == "exponential":
            skipped.append(Skipped(f"honour Retry-After in client {name!r}", NO_HEADER))
        else:
            out.append(Change("retry-after", name, f"honour Retry-After in client {name!r}",
                              values=("retry-after",)))
    if retry.policy != "exponential":
        if json_rpc and retry.policy == "retry-after":
            skipped.append(Skipped(f"exponential backoff in client {name!r}", NO_HEADER))
        else:
            out.append(Change("exponential", name,
                              f"exponential backoff with jitter in client {name!r}",
                              values=("exponential",)))
    if retry.policy == "none":
        return out
    if retry.max_attempts > 1:
        out.append(Change("fewer-attempts", name, f"fewer attempts in client {name!r}",
                          values=tuple(range(retry.max_attempts - 1, 0, -1))))
    if retry.budget_ratio is None and retry.max_attempts > 1:
        out.append(Change("retry-budget", name, f"a retry budget in client {name!r}",
                          values=(0.2, 0.1, 0.05)))
    return out


def _burst_changes(i: int, src, skipped) -> list[Change]:
    arrival = src.arrival
    if src.trace is not None:
        return [Change("burst-phase", str(i), f"shift replay {src.name!r} against the windows",
                       values=(3.0, 6.0, 9.0), params={"name": src.name, "trace": True})]
    if arrival is None or getattr(arrival, "process", None) != "block":
        return []
    out = []
    if arrival.jitter_s < WINDOW_S:
        out.append(Change("burst-jitter", str(i), f"spread {src.name!r}'s block bursts",
                          values=tuple(v for v in (3.0, 6.0, 12.0) if v > arrival.jitter_s),
                          params={"name": src.name}))
    out.append(Change("burst-phase", str(i), f"move {src.name!r}'s bursts off window "
                      "boundaries", values=(3.0, 6.0, 9.0),
                      params={"name": src.name, "offset": arrival.offset_s}))
    return out


def _drop_changes(loaded: LoadedScenario, i: int, src, seen: tuple[str, ...]) -> list[Change]:
    """Cache (or drop) a share of one billed method's calls of an open-loop or replayed
    source (the scenario's ``cache``): searched as ``1 / share``, so that a larger value
    is milder, from 25 % (``start`` 4) to 100 % (1) and down to 3 % (32)."""
    if src.workers is not None:
        return []  # (catalogue() names the skip)
    methods = seen if src.trace is not None else tuple(src.mix)
    out = []
    for m in methods:
        if m != SIZE_METHOD and loaded.pricing.rpc.cost(m) <= 0:
            continue
        out.append(Change("drop", f"{i}:{m}", f"cache a share of {m} calls of {src.name!r}",
                          values=(32.0, 1.0), continuous=True, throttles_only=False,
                          params={"index": i, "name": src.name, "method": m,
                                  "cache": dict(src.cache)}))
    return out


# --- the settings as overrides ------------------------------------------------------

def _pacing(c: Change, rate: float, budget_cu: float | None) -> Step:
    burst = _burst(budget_cu or 0.0, c.params["sources"])
    rate = float(f"{rate:.4g}")
    per = "per source, " if c.params["sources"] > 1 else ""
    return Step(rate, (f"clients.{c.target}.pacing={{rate_cu_per_s={rate!r}, "
                       f"burst_cu={burst!r}}}",),
                f"pace client {c.target!r} at {rate:,.4g} CU/s ({per}burst {burst:,.4g} CU)")


def _retry_policy(c: Change, policy: str, _b) -> Step:
    return Step(policy, (f'clients.{c.target}.retry.policy="{policy}"',),
                f"client {c.target!r}: retry policy {policy}")


def _attempts(c: Change, n: int, _b) -> Step:
    return Step(n, (f"clients.{c.target}.retry.max_attempts={n}",),
                f"client {c.target!r}: at most {n} attempt(s)")


def _budget(c: Change, ratio: float, _b) -> Step:
    return Step(ratio, (f"clients.{c.target}.retry.budget_ratio={ratio!r}",),
                f"client {c.target!r}: retries at most {ratio:.0%} of requests (+ 10)")


def _jitter(c: Change, s: float, _b) -> Step:
    return Step(s, (f"sources[{c.target}].arrival.jitter_s={s!r}",),
                f"source {c.params['name']!r}: spread each burst over {s:g} s")


def _phase(c: Change, s: float, _b) -> Step:
    if c.params.get("trace"):
        return Step(s, (f"sources[{c.target}].replay.phase_shift_s={s!r}",),
                    f"replay {c.params['name']!r} shifted by {s:g} s")
    offset = round((c.params["offset"] + s) % WINDOW_S, 6)
    return Step(s, (f"sources[{c.target}].arrival.offset_s={offset!r}",),
                f"source {c.params['name']!r}: bursts {s:g} s later in the slot "
                f"(offset {offset:g} s)")


def _connections(c: Change, n: int, _b) -> Step:
    return Step(n, (f"clients.{c.target}.http.reuse=true",
                    f"clients.{c.target}.http.max_connections={n}"),
                f"client {c.target!r}: reuse connections, pool of {n}")


def _websockets(c: Change, n: int, _b) -> Step:
    return Step(n, (f"streams[{c.target}].connections={n}",),
                f"stream client {c.params['name']!r}: {n} connection(s)")


def _drop(c: Change, inverse_share: float, _b) -> Step:
    share = min(1.0, float(f"{1.0 / inverse_share:.3g}"))
    method = c.params["method"]
    cache = {**c.params["cache"], method: share}
    table = ", ".join(f"{json.dumps(k)} = {v!r}" for k, v in cache.items())
    return Step(share, (f"sources[{c.params['index']}].cache={{{table}}}",),
                f"source {c.params['name']!r}: cache {share * 100:.3g} % of its {method} "
                "calls (answered by the client, never sent)")


_STEPS = {"pacing": _pacing, "retry-after": _retry_policy, "exponential": _retry_policy,
          "fewer-attempts": _attempts, "retry-budget": _budget, "burst-jitter": _jitter,
          "burst-phase": _phase, "connections": _connections,
          "fewer-websockets": _websockets, "drop": _drop}
