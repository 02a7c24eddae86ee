"""Client-side pacing: a token bucket in CU per second (pure: no SimPy).

Lazy, not ticking: the bucket's level is computed from ``now``. A request that finds too
few tokens takes them anyway (the level goes negative: a debt) and waits exactly until
the debt would be refilled, so waiting requests leave in order and the long-run sending
rate never exceeds ``rate_cu_per_s`` (plus the initial ``burst_cu``).
"""

from __future__ import annotations


class TokenBucket:
    """``rate_cu_per_s`` tokens per second, at most ``burst_cu`` stored; starts full."""

    def __init__(self, rate_cu_per_s: float, burst_cu: float) -> None:
        self.rate = float(rate_cu_per_s)
        self.burst = float(burst_cu)
        self._tokens = self.burst
        self._t = 0.0

    def delay(self, now: float, cost: float) -> float:
        """Take ``cost`` tokens at ``now``; seconds the request must wait before sending."""
        if cost <= 0.0:
            return 0.0
        tokens = min(self.burst, self._tokens + (now - self._t) * self.rate)
        tokens -= cost
        self._tokens, self._t = tokens, now
        return 0.0 if tokens >= 0.0 else -tokens / self.rate
