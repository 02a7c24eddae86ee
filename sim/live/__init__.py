"""A live emulator of the service on loopback, and a real client that drives it.

``capsim serve`` (:mod:`.server`, :mod:`.app`) answers real HTTP/2 and websocket
clients with the decisions of the simulator's own policy objects (the CU limiter, the
websocket slot pool, the account's connection limits) on a scaled wall clock
(:mod:`.clock`). ``capsim drive`` (:mod:`.drive`) replays a scenario's demand against it
with real connection pools and writes what happened as a canonical trace, which
:mod:`sim.calibration.agreement` checks against the model.

Nothing here is imported by the simulator; the optional ``live`` extra provides the
server and client stacks (hypercorn, httpx, websockets, trustme).
"""
