"""The scenario's ``load`` multiplier: one rule per kind of demand, applied once.

:func:`scale_scenario` returns the scenario with every source's demand multiplied by
``load`` (x below); the plan builder calls it before drawing anything, so every tier,
the closed-loop workers and the websocket clients all see the scaled scenario.

=========================  ==============================================================
source kind                rule
=========================  ==============================================================
poisson, constant          ``rate * x`` (constant keeps its phase)
onoff                      ``rate_on * x`` and ``rate_off * x``; sojourn times unchanged
daily                      ``rate * x``; the daily shape unchanged
ramp                       ``start_rate * x`` and ``end_rate * x``; ramp times unchanged
spikes                     ``base_rate * x`` and ``spike_rate * x``; spike times unchanged
block                      ``per_block * x`` per slot, stochastically rounded: each slot
                           sends floor(m x) requests plus one with probability
                           m x - floor(m x) (exact mean; slots and jitter unchanged)
trace replay               ``replay.load_multiplier * x``
closed-loop workers        ``count`` -> floor(count * x + 1/2) (round half up; may be 0)
websocket clients          closed loop: ``connections`` -> floor(connections * x + 1/2);
                           open loop: their ``arrival`` as above
=========================  ==============================================================

Every rule is non-decreasing in x, and x = 1 returns the scenario itself (nothing is
redrawn, so ``load = 1`` is byte-identical to no ``load`` key). Products of counts are
computed in decimal (``6 * 1.1`` is 6.6, rounded to 7; ``5 * 0.5`` is 2.5, rounded to
3). The service's own publishing rates (``[ws]``) are not demand and stay as they are.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from ..config.arrivals import BlockSync, ConstantRate, DailyProfile, OnOff, Poisson, Ramp, Spikes
from ..config.scenario import Scenario, Source

_RATE_FIELDS: dict[type, tuple[str, ...]] = {
    Poisson: ("rate",),
    ConstantRate: ("rate",),
    DailyProfile: ("rate",),
    OnOff: ("rate_on", "rate_off"),
    Ramp: ("start_rate", "end_rate"),
    Spikes: ("base_rate", "spike_rate"),
    BlockSync: ("per_block",),
}


def scaled_count(count: int, load: float) -> int:
    """``count * load`` rounded half up, computed on the decimal value of ``load``."""
    product = Decimal(count) * Decimal(repr(float(load)))
    return int(product.to_integral_value(rounding=ROUND_HALF_UP))


def scale_arrival(arrival, load: float):
    """The arrival process with its rates (or per-block count) multiplied by ``load``."""
    if load == 1:
        return arrival
    fields = _RATE_FIELDS[type(arrival)]
    # model_copy skips validation: BlockSync.per_block may become a fraction on purpose.
    return arrival.model_copy(update={f: getattr(arrival, f) * load for f in fields})


def _scale_source(src: Source, load: float) -> Source:
    if src.arrival is not None:
        return src.model_copy(update={"arrival": scale_arrival(src.arrival, load)})
    if src.workers is not None:
        workers = src.workers.model_copy(update={"count": scaled_count(src.workers.count, load)})
        return src.model_copy(update={"workers": workers})
    replay = src.replay.model_copy(update={"load_multiplier": src.replay.load_multiplier * load})
    return src.model_copy(update={"replay": replay})


def _scale_stream_client(client, load: float):
    if client.arrival is not None:
        return client.model_copy(update={"arrival": scale_arrival(client.arrival, load)})
    return client.model_copy(update={"connections": scaled_count(client.connections, load)})


def scale_scenario(sc: Scenario) -> Scenario:
    """``sc`` with every source's demand multiplied by ``sc.load`` (``sc`` itself at 1)."""
    load = sc.load
    if load == 1:
        return sc
    if not (math.isfinite(load) and load > 0):
        raise ValueError("load must be finite and > 0")
    return sc.model_copy(update={
        "sources": [_scale_source(s, load) for s in sc.sources],
        "streams": [_scale_stream_client(c, load) for c in sc.streams],
    })


def load_note(sc: Scenario) -> str | None:
    """The line a run's summary notes carry when its demand was scaled."""
    if sc.load == 1:
        return None
    return (f"load {sc.load:g}: every source's demand scaled by {sc.load:g} "
            "(rates multiplied, worker and connection counts rounded half up; "
            "docs/reference/scenario.md)")
