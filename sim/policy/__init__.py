"""The service's policies, usable without SimPy: the CU limiter, the admission order, the
account's HTTP/2 connection limits, the websocket slot pool, client pacing and retry
decisions. (The tier catalog, pricing and scenario resolution are input: ``sim.config``.)

Plain objects driven by explicit times (``now``), so the SimPy model, a live emulator
or a test can call them alike. ``python -c "import sim.policy, sys; assert 'simpy' not
in sys.modules"`` holds, and a test keeps it so.

The names below are imported on first use (:mod:`sim.core.lazy`): ``sim.config.tiers`` alone
loads neither the scenario models nor numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import exports

_WHERE = {
    "AccountConnections": ".connections",
    "CULimiter": ".limiter", "Reservation": ".limiter",
    "LIMITERS": ".limiters", "Limiter": ".limiters", "make_limiter": ".limiters",
    "TokenBucket": ".pacing",
    "RetryDecider": ".retry",
}

__all__ = ["LIMITERS", "AccountConnections", "CULimiter", "Limiter", "Reservation",
           "RetryDecider", "TokenBucket", "make_limiter"]

__getattr__, __dir__ = exports(globals(), _WHERE)

if TYPE_CHECKING:  # pragma: no cover
    from .connections import AccountConnections
    from .limiter import CULimiter, Reservation
    from .limiters import LIMITERS, Limiter, make_limiter
    from .pacing import TokenBucket
    from .retry import RetryDecider
