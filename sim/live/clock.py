"""The emulator's service clock: wall time scaled by ``--time-scale``.

Service time ``t`` (seconds) starts at 0 when the server starts (``t0_unix``, Unix
seconds) and runs ``time_scale`` times faster than the wall clock, so a test can live a
minute of service time in a few seconds. Every policy object is asked with service
time, exactly as the simulator asks them with simulated time; the window boundaries of
``epoch`` alignment are multiples of 12 s of service time.

The clock is derived from ``time.time()`` (not a monotonic clock) so that another
process on the same machine -- ``capsim drive`` -- can convert its own timestamps to
service time from ``t0_unix`` alone.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ServiceClock:
    """Service seconds since ``t0_unix``, at ``time_scale`` service seconds per wall second."""

    t0_unix: float
    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.time_scale < math.inf:  # inf: every sleep is 0, the loop spins
            raise ValueError("time_scale must be positive and finite")

    @classmethod
    def starting_now(cls, time_scale: float = 1.0) -> ServiceClock:
        """A clock whose service time 0 is now."""
        return cls(time.time(), float(time_scale))

    def now(self) -> float:
        """Service seconds at this instant."""
        return self.at(time.time())

    def at(self, unix_s: float) -> float:
        """Service seconds at the Unix time ``unix_s``."""
        return (unix_s - self.t0_unix) * self.time_scale

    def wall(self, service_s: float) -> float:
        """Wall seconds that ``service_s`` seconds of service time last."""
        return service_s / self.time_scale

    async def sleep(self, service_s: float) -> None:
        """Sleep for ``service_s`` seconds of service time."""
        if service_s > 0:
            await asyncio.sleep(service_s / self.time_scale)

    async def sleep_until(self, service_t: float) -> None:
        """Sleep until service time ``service_t`` (at once if it has passed)."""
        await self.sleep(service_t - self.now())
