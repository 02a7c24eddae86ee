"""Websocket connections of the accounts: slots, handshakes, publishing, reconnect storms.

Along a timeline (cap 2, ``stale_expiry_s`` 30, a client holding 2 connections and
reconnecting every second, ``fixed`` 1 s)::

    t=0    2 handshakes -> ok               slots: 2 live
    t=10   both drop uncleanly              slots: 0 live, 2 stale until t=40
    t=11   2 handshakes -> 435, Retry-After 29 (seconds to the earliest stale expiry)
    ...    one pair a second, Retry-After 28, 27, ..., 1
    t=40   the stale slots expire -> ok     slots: 2 live
    events published on the stream in 10 <= t < 40 are lost to both connections

Rules (spec 5, 6, 7, 8.2.3, 8.3; docs/explanation/spec-rules.md). A handshake checks,
in order: the key (``401``), the tier's API selection (``402``: the Streams API for
pending-txs / new-blocks / pending-logs, the Search API for monitoring), the account's
slot cap (``435`` with Retry-After), then reserves ``connect_cu`` in the account limiter
(window exhausted or cost over the budget: ``ws_cu_rejected`` with the limiter's
Retry-After; no daily allowance: ``402``); a slot taken by a handshake that is then
refused is given back at once. A clean close frees the slot at once, an unclean one
leaves it stale for ``stale_expiry_s``. Slots are computed lazily from ``now``.

The service publishes each stream once per account, for every stream with at least
one client (new-blocks one event per slot, missed with a probability; the others
Poisson). Each event goes to every live connection on the stream; on a billed stream
each delivery reserves ``publish_cu`` at publish time. A delivery that cannot reserve
closes that connection (``on_exhausted = "close"``: an error and a clean close, then the
client's reconnect policy) or is dropped (``"drop"``: the stream stays open).

Events are counted, not stored: a connection notes how many its stream had published
when it goes up or down, so an event costs nothing unless its stream is billed and has
live connections, then one SimPy event and O(live connections). An event at the very
instant a connection opens reaches it; one at the instant it closes does not. Lost
events are those published while a connection its client wanted was down, plus
deliveries dropped for exhaustion.

Where it lives: the slot pool is a policy (:mod:`sim.policy.slots`, no SimPy); the
session processes and the service side are :mod:`sim.model.websockets.sessions`; what a run
records (sessions, totals, handshakes written to the attempt recorder) is
:mod:`sim.model.websockets.records`. This module gathers their public names.
"""

from ...core.vocabulary import CLOSE_KINDS
from ...policy.slots import SlotPool, summed_series
from .records import HandshakeLog, RecorderHandshakes, WebsocketsResult
from .sessions import CLEAN, END, EXHAUSTED, UNCLEAN, Websockets

__all__ = ["CLEAN", "CLOSE_KINDS", "END", "EXHAUSTED", "UNCLEAN", "HandshakeLog",
           "RecorderHandshakes", "SlotPool", "WebsocketsResult", "Websockets", "summed_series"]
