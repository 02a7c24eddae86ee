"""``capsim advise --jobs 2`` gives the advice ``--jobs 1`` gives: each run is a pure
function of its spec, whichever process simulates it (slow by folder)."""

from __future__ import annotations

import sim
from sim.jobs.executors import LocalPoolExecutor


def test_a_process_pool_gives_the_same_advice():
    args = dict(overrides=["duration=120", "slo.allowance_must_last_day=false"],
                tiers=["All 3 APIs", "Professional bundle"], replications=2, budget=60)
    alone = sim.advise(None, **args)
    with LocalPoolExecutor(2) as pool:
        pooled = sim.advise(None, executor=pool, **args)
    assert pooled == alone
