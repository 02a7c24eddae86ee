"""Closed connections freed within seconds, not at Python's next full collection.

Every connection the server has served ends as a reference cycle (hypercorn's protocol
and TCP server hold each other's bound methods, asyncio's TLS transport and protocol,
exceptions' tracebacks), so reference counting never frees it; the cycle collector does,
but a connection lives long enough to reach the oldest generation, which CPython
collects only once the objects waiting there reach a quarter of those that survived the
last full collection -- tens of thousands after start-up. Meanwhile each dead
connection keeps its TLS buffers (asyncio allocates 256 KiB per connection): the
emulator's soak grew by megabytes a minute, then fell back at the next full collection
(docs/reference/benchmarks.md, "Emulator soak").

So the server, once started, moves everything alive into the permanent generation
(:func:`gc.freeze`: start-up objects are never garbage, and full collections then
scan only what was made since), and every :data:`COLLECT_EVERY_S` in which a
connection ended runs a full collection (:func:`collect_closed`), a millisecond or two.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc

COLLECT_EVERY_S = 5.0
"""At most this many wall seconds between a connection's end and its memory's release."""


def freeze_startup() -> None:
    """Collect, then exempt every object alive now from later collections."""
    gc.collect()
    gc.freeze()


async def collect_closed(closed_count, stop: asyncio.Event,
                         every_s: float | None = None) -> None:
    """Until ``stop`` is set: every ``every_s`` (default :data:`COLLECT_EVERY_S`) in which
    ``closed_count()`` grew, a full collection, and again every ``every_s`` after it while
    the last one found garbage: a connection's close is counted while its task is still
    winding down, so its cycle may only become garbage after the collection its close
    caused (on a loaded machine the last connections before a quiet spell stayed)."""
    seen = closed_count()
    found = 0
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s or COLLECT_EVERY_S)
        now = closed_count()
        if now != seen or found:
            seen = now
            found = gc.collect()
