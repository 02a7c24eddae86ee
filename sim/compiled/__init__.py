"""The compiled engine (issue 31): a tier's run as one numba event loop, HTTP and the
billed websocket publishing in the loop, the websocket sessions in Python between its
events.

The SimPy model (:mod:`sim.model.engine`) stays the reference; this package runs the same
lifecycle over struct-of-arrays state and writes the same attempt and request rows, bit
for bit (``tests/validation/test_compiled_engine.py`` holds the two together).

* :mod:`.jit` -- numba, imported only here and only when a compiled run starts, with its
  cache in the user's cache folder.
* :mod:`.policies` -- the policy state machines (limiter, connection limits, client
  pools, retry decisions, pacing) as plain functions over state arrays.
* :mod:`.loop` -- the event loop.
* :mod:`.engine` -- :class:`CompiledTierRun`, the Python driver: it builds the state from
  the same objects :class:`~sim.model.engine.TierRun` builds, hands in the demand and the
  random blocks, and flushes rows through the recorder.
* :mod:`.websockets`, :mod:`.sessions`, :mod:`.publish` -- the websocket side: the
  model's sessions run between the loop's events on one event counter, spending from
  the loop's limiter arrays; a billed stream's deliveries are loop events.
* :mod:`.choice` -- ``--engine auto|simpy|compiled``: which scenarios it covers.

Light commands never import this package's numba modules (only :mod:`.choice`, which
imports no numba).
"""
