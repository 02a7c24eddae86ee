"""The engine's environment (an inline run loop) behaves as SimPy's own, event for event."""

from __future__ import annotations

import pytest
import simpy
from simpy.core import StopSimulation

from sim.model.environment import Environment

BOTH = [simpy.Environment, Environment]


def _trace(env_class):
    """A small program using processes, timeouts, interrupts, shared-time ties and a
    condition; returns the (time, what) log."""
    env, log = env_class(), []

    def sleeper(name, delay):
        try:
            yield env.timeout(delay)
            log.append((env.now, f"{name} woke"))
        except simpy.Interrupt as i:
            log.append((env.now, f"{name} interrupted: {i.cause}"))

    def boss(victim):
        yield env.timeout(1.5)
        victim.interrupt("stop")
        yield env.timeout(0.5) & env.timeout(0.5)  # a condition, ties at t = 2
        log.append((env.now, "boss done"))

    a = env.process(sleeper("a", 3.0))
    env.process(sleeper("b", 2.0))
    env.process(sleeper("c", 2.0))
    env.process(boss(a))
    env.run()
    return log, env.now


@pytest.mark.parametrize("env_class", [Environment])
def test_run_gives_simpy_s_order_of_events(env_class):
    assert _trace(env_class) == _trace(simpy.Environment)


@pytest.mark.parametrize("env_class", BOTH)
def test_stop_simulation_returns_its_value_and_resumes_the_rest(env_class):
    env, seen = env_class(), []
    ev = env.event()
    ev.callbacks += [lambda e: seen.append("first"), StopSimulation.callback,
                     lambda e: seen.append("after the stop")]
    ev.succeed("x")
    env.timeout(1.0).callbacks.append(lambda e: seen.append("later"))
    assert env.run() == "x"
    assert seen == ["first"]
    env.run()  # the callbacks not yet called come first on resuming
    assert seen == ["first", "after the stop", "later"]


@pytest.mark.parametrize("env_class", BOTH)
def test_a_failed_process_crashes_the_run_with_its_cause(env_class):
    env = env_class()

    def broken():
        yield env.timeout(1.0)
        raise ValueError("boom")

    env.process(broken())
    with pytest.raises(ValueError, match="boom") as info:
        env.run()
    assert isinstance(info.value.__cause__, ValueError)
    assert env.now == 1.0


@pytest.mark.parametrize("env_class", BOTH)
def test_run_until_is_simpy_s(env_class):
    env, seen = env_class(), []
    for t in (1.0, 2.0, 3.0):
        env.timeout(t).callbacks.append(lambda e, t=t: seen.append(t))
    env.run(until=2.5)
    assert seen == [1.0, 2.0] and env.now == 2.5


def test_start_up_check_of_the_simpy_internals_the_engine_uses(monkeypatch):
    from sim.core.errors import CapsimError
    from sim.model import environment

    environment.check_simpy()  # the installed SimPy has them

    class NoHeap(simpy.Environment):
        def __init__(self):
            super().__init__()
            del self._eid  # as a SimPy that renamed its id counter would be

    monkeypatch.setattr(simpy, "Environment", NoHeap)
    with pytest.raises(CapsimError, match=r"internals the engine uses.*simpy>=4\.1,<5"):
        environment.check_simpy()


def test_simpy_is_pinned_below_5():
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[3] / "pyproject.toml").read_text()
    assert re.search(r'"simpy>=4\.1,<5"', text)
