"""SimPy's environment with a leaner run loop for a run to exhaustion.

:meth:`simpy.Environment.run` calls :meth:`~simpy.Environment.step` once per event; a
tier's run processes about three events per attempt, and that call, its ``try`` blocks
and the ``now`` property are a measurable share of the engine's time. :meth:`run`
without ``until`` does step's work inline -- pop the earliest ``(time, priority, id)``,
call the callbacks, crash on a failed event nobody defused, stop on ``StopSimulation``
as SimPy does -- so the order of events and every result are SimPy's.
``run(until=...)`` is SimPy's own.

The engine (:mod:`sim.model.engine`, :mod:`sim.model.websockets.sessions`) relies on
SimPy 4 internals, not its public API: the event heap ``Environment._queue`` of
``(time, priority, id, event)`` entries, the id counter ``Environment._eid``, the clock
``Environment._now``, an event's ``callbacks`` / ``_ok`` / ``_value`` / ``_defused``, and
``simpy.core.EventPriority`` / ``StopSimulation`` / ``simpy.events.NORMAL``.
``pyproject.toml`` pins ``simpy<5``; :func:`check_simpy` checks them on import, so a
SimPy without them stops the run with one clear message instead of a wrong result.
"""

from __future__ import annotations

from heapq import heappop

import simpy

from ..core.errors import CapsimError

try:
    from simpy.core import EventPriority, StopSimulation
    from simpy.events import NORMAL, Event
except ImportError as err:  # pragma: no cover - only with an unsupported SimPy
    raise CapsimError(f"the installed SimPy {getattr(simpy, '__version__', '?')} lacks "
                      f"{err.name or 'a name'} the engine uses; expected simpy>=4.1,<5 "
                      "(pip install 'simpy>=4.1,<5')") from None


def check_simpy() -> None:
    """Raise :class:`CapsimError` unless SimPy has the internals the engine uses (above):
    an event scheduled with ``env.schedule`` must land on ``env._queue`` as
    ``(now + delay, priority, next(env._eid), event)`` and run as the engine runs it."""
    version = getattr(simpy, "__version__", "?")
    try:
        env = simpy.Environment()
        queue, eid = env._queue, env._eid
        ev = Event(env)
        ev.succeed("x")  # scheduled now, NORMAL
        entry = queue[0]
        nxt = next(eid)
        ok = (isinstance(queue, list) and len(entry) == 4 and entry[0] == 0
              and entry[1] == NORMAL and entry[2] == nxt - 1 and entry[3] is ev
              and env._now == 0 and isinstance(ev.callbacks, list) and ev._ok is True
              and ev._value == "x" and not hasattr(ev, "_defused")
              and int(EventPriority(-1)) == -1 and issubclass(StopSimulation, Exception))
    except (AttributeError, TypeError, IndexError, ValueError):
        ok = False
    if not ok:
        raise CapsimError(f"the installed SimPy {version} does not have the internals the "
                          "engine uses (Environment._queue, _eid, _now; an event's "
                          "callbacks and _ok); expected simpy>=4.1,<5 "
                          "(pip install 'simpy>=4.1,<5')")


check_simpy()


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
