"""The limiter's interface, and ``[limiter] kind`` -> its implementation.

The model (and a future live server) rely only on the verbs of :class:`Limiter`. To add
a policy: write a class with these verbs in this package, add its name to
:class:`sim.config.scenario.LimiterSettings` ``kind`` (with any settings it needs), list
it in :data:`LIMITERS`, and test it beside ``tests/unit/policy/test_limiter.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..config.scenario import LimiterSettings
from .limiter import CULimiter, Reservation, WindowStats


class Limiter(Protocol):
    """One account's CU budget, driven by explicit times (seconds of simulated time)."""

    budget_cu: float
    window_s: float
    daily_allowance_cu: float | None
    daily_used: dict[int, float]
    daily_exhausted_at: dict[int, float]

    def reserve(self, now: float, cost: float, actual: float | None = None) -> Reservation:
        """Admit ``cost`` CU at ``now`` or refuse it; ``actual`` is what it will settle to."""

    def settle(self, now: float, booked: Reservation, reserved: float, actual: float) -> None:
        """Settle an admitted reservation to its ``actual`` cost."""

    def spend(self, now: float, cost: float) -> Reservation:
        """Reserve a cost known in advance and settle it at once."""

    def retry_after(self, now: float) -> int:
        """Whole seconds a throttled client is told to wait."""

    def available(self, now: float) -> float:
        """CU a reservation at ``now`` could take."""

    def window_stats(self) -> WindowStats:
        """Per-window columns for the report."""


LimiterFactory = Callable[..., Limiter]

LIMITERS: dict[str, LimiterFactory] = {
    "fixed-window": lambda budget_cu, settings, **kw: CULimiter(
        budget_cu, alignment=settings.alignment, refund_to=settings.refund_to,
        phase_s=settings.phase_s, **kw),
}
"""``[limiter] kind`` -> a factory ``(budget_cu, settings, daily_allowance_cu=...,
day_offset_s=...)``."""


def make_limiter(budget_cu: float, settings: LimiterSettings, *,
                 daily_allowance_cu: float | None = None, day_offset_s: float = 0.0) -> Limiter:
    """The limiter ``settings.kind`` names, for a tier's ``budget_cu`` per window."""
    return LIMITERS[settings.kind](budget_cu, settings, daily_allowance_cu=daily_allowance_cu,
                                   day_offset_s=day_offset_s)
