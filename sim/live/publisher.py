"""The emulator's stream publishers: one task per stream, on the service clock.

Each stream publishes as the scenario's ``[ws]`` table says (the same
:class:`~sim.model.ws_config.StreamSource` the simulator reads): ``new-blocks`` one
event per ``slot_s`` of service time (each missed with ``miss_probability``), the
others Poisson at ``rate`` per service second (hourly weights are not applied: an
emulator session is short). Publishing runs from service time 0 for as long as the
server does; a stream with no live socket publishes into the void.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from ..config.scenario import Scenario
from ..core.rng import stream as named_stream
from ..core.vocabulary import MONITORING, STREAMS_API_STREAMS, Rng
from .clock import ServiceClock

Deliver = Callable[[str, int, float], Awaitable[None]]


class Publisher:
    """Publishing tasks for every stream; ``deliver(stream, seq, t)`` is called per event."""

    def __init__(self, scenario: Scenario, clock: ServiceClock, deliver: Deliver) -> None:
        self.scenario, self.clock, self.deliver = scenario, clock, deliver
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        """Start one task per stream (call inside the running event loop)."""
        for name in (*STREAMS_API_STREAMS, MONITORING):
            self._tasks.append(asyncio.get_running_loop().create_task(self._run(name)))

    async def stop(self) -> None:
        """Cancel the tasks and wait for them."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task  # a publisher that failed must not block the shutdown
        self._tasks.clear()

    def times(self, name: str):
        """Publish times of ``name`` in service seconds, increasing, without end."""
        src = self.scenario.ws.source(name)
        rng = named_stream(self.scenario.seed, Rng.LIVE, Rng.PUBLISH, name)
        if src.kind == "block":
            k = 1
            while True:
                t, k = k * src.slot_s, k + 1
                if rng.random() >= src.miss_probability:
                    yield t
        if src.rate <= 0:
            return
        t = 0.0
        while True:
            t += float(rng.standard_exponential()) / src.rate
            yield t

    async def _run(self, name: str) -> None:
        seq, start = 0, self.clock.now()
        for t in self.times(name):
            if t < start:  # events before the server was up were never published
                continue
            await self.clock.sleep_until(t)
            seq += 1
            await self.deliver(name, seq, t)
