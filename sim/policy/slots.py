"""The account's active-websocket slots (spec 8.3): a cap on live plus stale slots.

Along a timeline (cap 2, a stale slot expiring 30 s after an unclean drop,
``retry_after_live_s`` 30)::

    t=0    acquire, acquire        -> ok, ok           live 2, stale 0
    t=1    acquire                 -> 435, Retry-After 30 (every slot is live)
    t=5    release_unclean(30)                          live 1, stale 1 until 35
    t=5.5  acquire                 -> 435, Retry-After 30 (ceil of 29.5 to the expiry)
    t=34   release_clean, acquire  -> ok               live 2, stale 1 (no change: no row)
    t=35   the stale slot expires                       live 1, stale 0
    t=35   acquire                 -> ok               live 2, stale 0

Rules: ``live + stale <= cap`` always; a clean close frees its slot at once, an unclean
one leaves it stale until its expiry; a refused acquire answers with the whole seconds
(at least 1) until the earliest stale slot expires, or ``retry_after_live_s`` when every
slot is live (always, at cap 0). Expiries are applied lazily from ``now`` by whichever
call comes next: nothing ticks. Pure Python and numpy, no SimPy: the simulator and the
live emulator share it, and :func:`stale_expiry_s` (how long a dropped slot stays stale).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np

from ..config.websockets import ExpiryRange


def stale_expiry_s(expiry: float | ExpiryRange, uniform: Callable[[], float]) -> float:
    """How long one unclean drop's slot stays stale (``[ws] stale_expiry_s``): a number as
    it is, a ``{low, high}`` range drawn uniformly (``uniform()`` called once, only then)."""
    if isinstance(expiry, ExpiryRange):
        return expiry.low + (expiry.high - expiry.low) * uniform()
    return float(expiry)


def mean_stale_expiry_s(expiry: float | ExpiryRange) -> float:
    """The expected stale time of :func:`stale_expiry_s` (a range's midpoint)."""
    if isinstance(expiry, ExpiryRange):
        return (expiry.low + expiry.high) / 2.0
    return float(expiry)


def whole_seconds_until(target: float, now: float) -> int:
    """Whole seconds (ceil, at least 1) from ``now`` until ``target``."""
    wait = max(1, math.ceil(target - now))
    if now + wait < target:  # float rounding left us a hair short
        wait += 1
    return wait


def _step(ts: list, lives: list, stales: list, t: float, live: int, stale: int) -> None:
    """Append a (t, live, stale) step; steps at one time merge, steps that change
    nothing (a slot taken and given back at once) vanish. The first row stays."""
    if ts[-1] == t and len(ts) > 1:
        if lives[-2] == live and stales[-2] == stale:
            ts.pop()
            lives.pop()
            stales.pop()
        else:
            lives[-1], stales[-1] = live, stale
    elif ts[-1] == t:
        lives[-1], stales[-1] = live, stale
    elif lives[-1] != live or stales[-1] != stale:
        ts.append(t)
        lives.append(live)
        stales.append(stale)


class SlotPool:
    """The account's active-websocket slots (spec 8.3); pure, time passed in as ``now``.

    ``live + stale <= cap`` always. A slot released uncleanly stays stale until its
    expiry; expiries sit in a heap and are applied lazily by whichever call comes next.
    :meth:`series` gives the (time, live, stale) steps for the plot: one row per time at
    which the state changed, holding the state after that time's last change.
    """

    def __init__(self, cap: int, retry_after_live_s: float = 30.0, t0: float = 0.0) -> None:
        if cap < 0:
            raise ValueError("cap must be >= 0")
        self.cap = int(cap)
        self.retry_after_live_s = max(1, math.ceil(retry_after_live_s))
        self.live = 0
        self._expiries: list[float] = []
        self._t, self._live, self._stale = [float(t0)], [0], [0]

    def _record(self, t: float) -> None:
        _step(self._t, self._live, self._stale, t, self.live, len(self._expiries))

    def _expire(self, now: float) -> None:
        heap = self._expiries
        while heap and heap[0] <= now:
            self._record(heapq.heappop(heap))

    def stale(self, now: float) -> int:
        """Stale slots at ``now``."""
        self._expire(now)
        return len(self._expiries)

    def acquire(self, now: float) -> tuple[bool, int]:
        """Take a slot: ``(True, 0)``, or ``(False, Retry-After)`` at the cap.

        Retry-After is the whole seconds until the earliest stale slot expires, or
        ``retry_after_live_s`` when every slot is live (and always when the cap is 0).
        """
        self._expire(now)
        heap = self._expiries
        if self.live + len(heap) < self.cap:
            self.live += 1
            self._record(now)
            return True, 0
        if not heap:
            return False, self.retry_after_live_s
        return False, whole_seconds_until(heap[0], now)

    def release_clean(self, now: float) -> None:
        """A clean close: the slot is free at once."""
        if self.live <= 0:
            raise RuntimeError("release without a live slot")
        self._expire(now)
        self.live -= 1
        self._record(now)

    def release_unclean(self, now: float, expiry_s: float) -> None:
        """An unclean disconnect: the slot stays stale until ``now + expiry_s``."""
        if expiry_s <= 0:
            self.release_clean(now)
            return
        if self.live <= 0:
            raise RuntimeError("release without a live slot")
        self._expire(now)
        self.live -= 1
        heapq.heappush(self._expiries, now + expiry_s)
        self._record(now)

    def series(self, until: float = math.inf) -> dict[str, np.ndarray]:
        """Columns ``t``, ``live``, ``stale``, ``cap`` of every change, expiries up to
        ``until`` included; does not change the pool."""
        t, live, stale = list(self._t), list(self._live), list(self._stale)
        left = len(self._expiries)
        for e in sorted(x for x in self._expiries if x <= until):
            left -= 1
            _step(t, live, stale, e, self.live, left)
        return {"t": np.asarray(t, dtype=np.float64), "live": np.asarray(live, dtype=np.int32),
                "stale": np.asarray(stale, dtype=np.int32),
                "cap": np.full(len(t), self.cap, dtype=np.int32)}


def summed_series(series: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Several pools' (t, live, stale, cap) steps as one: the sums at each change."""
    if len(series) == 1:
        return series[0]
    t = np.unique(np.concatenate([s["t"] for s in series]))
    out = {"t": t}
    for col in ("live", "stale", "cap"):
        total = np.zeros(len(t), dtype=np.int32)
        for s in series:
            total += s[col][np.searchsorted(s["t"], t, side="right") - 1]
        out[col] = total
    return out
