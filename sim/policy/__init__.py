"""The service's policies, usable without SimPy: the tier catalog and pricing, the CU
limiter, the account's HTTP/2 connection limits, client pacing and retry decisions.

Plain objects driven by explicit times (``now``), so the SimPy model, a live emulator
or a test can call them alike. ``python -c "import sim.policy, sys; assert 'simpy' not
in sys.modules"`` holds, and a test keeps it so.

The names below are imported on first use (:mod:`sim.lazy`): ``sim.policy.tiers`` alone
(``capsim tiers``) loads neither the scenario models nor numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import exports

_WHERE = {
    "AccountConnections": ".connections",
    "CULimiter": ".limiter", "Reservation": ".limiter",
    "LIMITERS": ".limiters", "Limiter": ".limiters", "make_limiter": ".limiters",
    "TokenBucket": ".pacing",
    "Pricing": ".pricing", "default_pricing_table": ".pricing",
    "LoadedScenario": ".resolved", "load": ".resolved", "validate": ".resolved",
    "RetryDecider": ".retry",
    "CATALOG": ".tiers", "Tier": ".tiers", "find_tier": ".tiers", "smallest_tier_for": ".tiers",
}

__all__ = ["CATALOG", "LIMITERS", "AccountConnections", "CULimiter", "Limiter",
           "LoadedScenario", "Pricing", "Reservation", "RetryDecider", "Tier", "TokenBucket",
           "default_pricing_table", "find_tier", "load", "make_limiter", "smallest_tier_for",
           "validate"]

__getattr__, __dir__ = exports(globals(), _WHERE)

if TYPE_CHECKING:  # pragma: no cover
    from .connections import AccountConnections
    from .limiter import CULimiter, Reservation
    from .limiters import LIMITERS, Limiter, make_limiter
    from .pacing import TokenBucket
    from .pricing import Pricing, default_pricing_table
    from .resolved import LoadedScenario, load, validate
    from .retry import RetryDecider
    from .tiers import CATALOG, Tier, find_tier, smallest_tier_for
