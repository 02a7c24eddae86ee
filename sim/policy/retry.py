"""Client retry policies (pure: no SimPy).

``delay(attempt, retry_after)`` answers how long a client waits before attempt
``attempt + 1`` after a refused ``attempt``, or ``None`` when it gives up (attempts
exhausted, or the retry budget spent). Jitter comes from the client's own named stream,
pre-drawn in blocks so that a retry costs no generator call.
"""

from __future__ import annotations

import numpy as np

from ..config.scenario import RetryPolicy
from ..core.draws import BlockDraws

_BLOCK = 4096


class RetryDecider:
    """One client's retry behaviour, with its retry budget and jitter stream."""

    def __init__(self, policy: RetryPolicy, rng: np.random.Generator) -> None:
        self.policy = policy
        self.retry_on = frozenset(policy.retry_on)
        self._kind = policy.policy
        self._uniform = BlockDraws(rng, _BLOCK)
        self.requests = 0
        self.retries = 0
        self.budget_refusals = 0

    def on_request(self, count: int = 1) -> None:
        """Count ``count`` new logical requests (the retry budget grows with them)."""
        self.requests += count

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up."""
        p = self.policy
        if self._kind == "none" or attempt >= p.max_attempts:
            return None
        if p.budget_ratio is not None and \
                self.retries >= p.budget_ratio * self.requests + p.budget_min_retries:
            self.budget_refusals += 1
            return None
        self.retries += 1
        if self._kind == "fixed":
            return p.delay_s
        if self._kind == "retry-after" and retry_after is not None:
            return retry_after + p.jitter_s * self._uniform()
        # exponential with full jitter (also retry-after's fallback without a header)
        return self._uniform() * min(p.cap_s, p.base_s * 2.0 ** (attempt - 1))
