"""How many requests a pacing change makes wait, from the demand alone.

A paced client's token bucket (:class:`sim.policy.pacing.TokenBucket`) decides each
send's wait from the send times and CU reserved, not from the service's replies. So
for the first attempt of every open-loop or replayed request the wait is exact without
simulating the service: the demand of the changed scenario, through one bucket per
paced source, in send order, as the engine does. Retries (also paced) and closed-loop
workers (whose send times depend on the replies) are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.resolved import LoadedScenario


@dataclass(frozen=True)
class PacedWaits:
    """First attempts of the paced open-loop sources: how many, how many wait, the
    mean and largest wait (seconds)."""

    requests: int
    delayed: int
    mean_wait_s: float
    max_wait_s: float


def paced_waits(loaded: LoadedScenario) -> PacedWaits | None:
    """The waits the pacing of ``loaded``'s clients imposes on first attempts (None: no
    open-loop source of a paced client)."""
    from ..policy.pacing import TokenBucket
    from ..workload.demand import build_plan

    sc = loaded.scenario
    buckets = {}
    for i, src in enumerate(sc.sources):
        pacing = sc.clients[src.client].pacing if src.client in sc.clients else None
        if pacing is not None and src.workers is None:
            buckets[i] = TokenBucket(pacing.rate_cu_per_s, pacing.burst_cu)
    if not buckets:
        return None
    n = delayed = 0
    total = longest = 0.0
    for block in build_plan(loaded).demand_blocks():
        for t, source, reserve in zip(block.t.tolist(), block.source.tolist(),
                                      block.reserve.tolist(), strict=True):
            bucket = buckets.get(source)
            if bucket is None:
                continue
            wait = bucket.delay(t, reserve)
            n += 1
            if wait > 0.0:
                delayed += 1
                total += wait
                longest = max(longest, wait)
    return PacedWaits(n, delayed, total / delayed if delayed else 0.0, longest)
