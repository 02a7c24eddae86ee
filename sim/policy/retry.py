"""Client retry and reconnect delays (pure: no SimPy).

:func:`backoff_s` is the one formula of a wait before trying again: an HTTP client's
retry (:class:`RetryDecider`, ``[clients.retry]``), a websocket client's reconnect
(:mod:`sim.model.websockets`, ``[[streams]] reconnect``) and the live driver's reconnect
all take it. ``delay(attempt, retry_after)`` answers how long a client waits before
attempt ``attempt + 1`` after a refused ``attempt``, or ``None`` when it gives up
(attempts exhausted, or the retry budget spent). Jitter comes from the client's own
named stream, pre-drawn in blocks so that a retry costs no generator call.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..config.scenario import RetryPolicy
from ..config.websockets import ReconnectPolicy
from ..core.draws import BlockDraws

_BLOCK = 4096
_MAX_DOUBLINGS = 60  # 2.0 ** n stays finite; any cap_s is reached long before


def backoff_s(policy: RetryPolicy | ReconnectPolicy, n: int, retry_after: float | None,
              uniform: Callable[[], float]) -> float:
    """Seconds to wait before trying again, the ``n``-th wait in a row (1: the first).

    ``immediate``: 0; ``fixed``: ``delay_s``; ``retry-after`` with a header
    (``retry_after`` not None nor NaN): the header plus ``jitter_s`` times a uniform draw;
    otherwise (``exponential``, or ``retry-after`` without a header, as after JSON-RPC
    ``-32005``) full jitter: a uniform draw times ``min(cap_s, base_s * 2 ** (n - 1))``.
    ``uniform()`` is called only when the formula uses a draw (at most once).
    """
    # (every retry of every client comes here: branches, not calls, on the way)
    kind = policy.policy
    if kind == "retry-after" and retry_after is not None and retry_after == retry_after:
        return retry_after + policy.jitter_s * uniform()
    if kind == "fixed":
        return policy.delay_s
    if kind == "immediate":
        return 0.0
    wait = policy.base_s * 2.0 ** (n - 1 if n <= _MAX_DOUBLINGS else _MAX_DOUBLINGS)
    cap = policy.cap_s
    return uniform() * (wait if wait < cap else cap)


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
        return backoff_s(p, attempt, retry_after, self._uniform)
