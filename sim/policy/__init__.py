"""The service's policies, usable without SimPy: the tier catalog and pricing, the CU
limiter, the account's HTTP/2 connection limits, client pacing and retry decisions.

Plain objects driven by explicit times (``now``), so the SimPy model, a live emulator
or a test can call them alike. ``python -c "import sim.policy, sys; assert 'simpy' not
in sys.modules"`` holds, and a test keeps it so.
"""

from .connections import AccountConnections
from .limiter import CULimiter, Reservation
from .limiters import LIMITERS, Limiter, make_limiter
from .pacing import TokenBucket
from .pricing import Pricing, default_pricing_table
from .resolved import LoadedScenario, load, validate
from .retry import RetryDecider
from .tiers import CATALOG, Tier, find_tier, smallest_tier_for

__all__ = ["CATALOG", "LIMITERS", "AccountConnections", "CULimiter", "Limiter",
           "LoadedScenario", "Pricing", "Reservation", "RetryDecider", "Tier", "TokenBucket",
           "default_pricing_table", "find_tier", "load", "make_limiter", "smallest_tier_for",
           "validate"]
