"""Closed-loop think times (sim/model/engine.py ``_worker``) against their distribution.

A worker sends, waits for the final reply, thinks, and sends again, so with a zero round
trip the pause between one request's reply (``t_end``) and the next request's first send
(``t_first``) is exactly the think time drawn. Those pauses must be independent draws:
no value recurs (a continuous distribution repeats a value with probability 0), and
their mean and variance agree with the distribution's own within a few standard errors.

For an exponential with mean m: variance m**2, fourth central moment 9 m**4, so the
standard error of the sample mean is m / sqrt(n) and that of the sample variance is
sqrt((9 m**4 - m**4) / n) = m**2 sqrt(8 / n).
"""

from __future__ import annotations

import math

import numpy as np

from sim.config.resolved import validate
from sim.model.engine import TierRun
from sim.workload.demand import build_plan

ZERO = {"dist": "constant", "value": 0.0}
MEAN = 1.0
DURATION = 4000.0
Z = 4.0  # standard errors allowed (two-sided p ~ 6e-5 per check)


def _pauses(seed: int) -> np.ndarray:
    raw = {
        "name": "think", "seed": seed, "duration": DURATION, "tiers": ["Advanced bundle"],
        "account": {"keys": ["key-a"]},
        "regions": [{"name": "here", "rtt_ms": 0.0}],
        "clients": {"default": {"retry": {"policy": "none"}}},
        "sources": [{"name": "w", "key": "key-a", "mix": {"svc_call": 1.0},
                     "workers": {"count": 1, "think": {"dist": "exponential", "mean": MEAN}}}],
        "methods": {"svc_call": {"api": "rpc", "service_time": ZERO}},
    }
    loaded = validate(raw, "test")
    plan = build_plan(loaded)
    q = TierRun(plan, loaded.tiers[0]).run().requests
    order = np.argsort(q["t_first"], kind="stable")
    t_first, t_end = q["t_first"][order], q["t_end"][order]
    return t_first[1:] - t_end[:-1]


def test_think_times_never_recur():
    pauses = _pauses(seed=3)
    n = len(pauses)
    # About DURATION / MEAN pauses, far more than any fixed table of draws.
    assert n > 0.9 * DURATION / MEAN
    # Rounded to 1 ns so float noise in t_first - t_end cannot make equal draws differ.
    distinct = len(np.unique(np.round(pauses, 9)))
    assert distinct == n, f"{n} pauses took only {distinct} distinct values"
    assert not np.any(np.isclose(pauses[256:], pauses[:-256], rtol=0, atol=1e-9))


def test_think_times_match_the_distribution():
    for seed in (3, 4, 5):
        pauses = _pauses(seed)
        n = len(pauses)
        assert np.all(pauses >= -1e-9)
        se_mean = MEAN / math.sqrt(n)
        se_var = MEAN**2 * math.sqrt(8.0 / n)
        assert abs(pauses.mean() - MEAN) < Z * se_mean, (seed, pauses.mean())
        assert abs(pauses.var(ddof=1) - MEAN**2) < Z * se_var, (seed, pauses.var(ddof=1))
