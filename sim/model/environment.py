"""SimPy's environment with a leaner run loop for a run to exhaustion.

:meth:`simpy.Environment.run` calls :meth:`~simpy.Environment.step` once per event; a
tier's run processes about three events per attempt, and that call, its ``try`` blocks
and the ``now`` property are a measurable share of the engine's time. :meth:`run`
without ``until`` does step's work inline -- pop the earliest ``(time, priority, id)``,
call the callbacks, crash on a failed event nobody defused, stop on ``StopSimulation``
as SimPy does -- so the order of events and every result are SimPy's.
``run(until=...)`` is SimPy's own.
"""

from __future__ import annotations

from heapq import heappop

import simpy
from simpy.core import EventPriority, StopSimulation


class Environment(simpy.Environment):
    """:class:`simpy.Environment`; ``run()`` to exhaustion without a call per event."""

    def run(self, until=None):
        if until is not None:
            return super().run(until)
        queue = self._queue
        try:
            while queue:
                self._now, _, _, event = heappop(queue)
                callbacks, event.callbacks = event.callbacks, None
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):
                    # As step(): a copy of the failure, caused by the original.
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
        except StopSimulation as stop:
            # As step() and run(): the callbacks not yet called go back on the heap
            # ahead of everything at this time, and run() returns the stop's value.
            event.callbacks = callbacks[callbacks.index(callback) + 1:]
            self.schedule(event, EventPriority(-1))
            return stop.args[0]
        return None
