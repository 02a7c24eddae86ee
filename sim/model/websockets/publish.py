"""When a stream publishes: its event times, generated in blocks and counted lazily.

A stream's events are a fixed sequence (common to every tier: one named random stream
per stream name). Nothing needs a SimPy event to *count* them: a connection going up or
down asks :meth:`PublishTimes.before` how many were published before ``now``. Only a billed
stream with live connections needs an event per publish (each delivery reserves CU at
that moment, interleaved with the HTTP traffic); :mod:`sim.model.websockets.sessions` schedules
those one at a time from :meth:`PublishTimes.peek`.

Times are generated ``_BLOCK`` random draws at a time (the same draws, in the same order,
as one value at a time), so memory does not grow with the run's length.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from ...config.websockets import StreamSource
from ...core.vocabulary import DAY_S, HOUR_S

_BLOCK = 1024


def wake_times(e: float, raw: np.ndarray) -> list[float]:
    """The times a process that last woke at ``e`` wakes at, sleeping ``t - now`` for
    each ``t`` of ``raw`` in turn: ``e_i = e_(i-1) + (t_i - e_(i-1))``.

    Computed for all ``i`` at once and repeated until nothing changes: pass ``k`` has the
    first ``k`` values right (each depends only on the one before), and a pass that
    changes nothing has every value right. ``e_i`` is ``t_i`` exactly whenever
    ``e_(i-1) >= t_i / 2`` (Sterbenz), so two passes are the rule.
    """
    e_i = raw
    for _ in range(len(raw) + 1):  # pass len(raw) has them all right (a NaN never settles)
        before = np.concatenate(([e], e_i[:-1]))
        again = before + (raw - before)
        if np.array_equal(again, e_i):
            return again.tolist()
        e_i = again
    raise ValueError("publish times that do not settle (not finite?)")


class PublishTimes:
    """The publish times of ``src`` in ``[0, duration_s)``, increasing, and a count.

    ``count`` is how many have been consumed (published): :meth:`before` consumes every
    time before ``now``, :meth:`pop` the next one. The times are those a SimPy
    process sleeping from one event to the next would wake at (``now + (t - now)``,
    which may differ from ``t`` in the last bit).
    """

    __slots__ = ("count", "_buf", "_i", "_rng", "_src", "_T", "_off", "_k", "_t", "_e",
                 "_top", "_accept", "_done")

    def __init__(self, src: StreamSource, rng: np.random.Generator, duration_s: float,
                 day_offset_s: float = 0.0) -> None:
        self.count = 0
        self._buf: list[float] = []
        self._i = 0
        self._rng, self._src, self._T, self._off = rng, src, float(duration_s), day_offset_s
        self._k, self._t, self._e = 1, 0.0, 0.0  # next block slot; last raw and wake time
        self._top, self._accept = src.rate, None
        self._done = src.kind != "block" and src.rate <= 0
        if src.kind != "block" and src.hourly_weights is not None:
            w = np.asarray(src.hourly_weights, dtype=float)  # thinning against the busiest hour
            w = w * (24.0 / w.sum())
            self._top = src.rate * w.max()
            self._accept = w / w.max()

    def _refill(self) -> bool:
        """Next non-empty block of times into the buffer; False when none are left."""
        while not self._done:
            raw = self._block_times() if self._src.kind == "block" else self._poisson_times()
            if len(raw):
                buf = wake_times(self._e, raw)
                self._e, self._buf, self._i = buf[-1], buf, 0
                return True
        return False

    def _block_times(self) -> np.ndarray:
        u = self._rng.random(_BLOCK)
        t = np.arange(self._k, self._k + _BLOCK, dtype=np.int64) * self._src.slot_s
        inside = t < self._T
        if not inside.all():
            self._done = True
        self._k += _BLOCK
        return t[inside & (u >= self._src.miss_probability)]

    def _poisson_times(self) -> np.ndarray:
        rng = self._rng
        gaps = rng.standard_exponential(_BLOCK) / self._top
        us = rng.random(_BLOCK) if self._accept is not None else None
        t = np.cumsum(np.concatenate(([self._t], gaps)))[1:]  # sequential, as t += gap
        self._t = float(t[-1])
        inside = t < self._T
        if not inside.all():
            self._done = True
        keep = inside
        if us is not None:
            hour = (((t + self._off) % DAY_S) // HOUR_S).astype(np.int64) % 24
            keep = keep & (us < self._accept[hour])
        return t[keep]

    def before(self, now: float) -> int:
        """Consume every time before ``now``; the count published so far."""
        while True:
            j = bisect.bisect_left(self._buf, now, self._i)
            self.count += j - self._i
            self._i = j
            if j < len(self._buf) or not self._refill():
                return self.count

    def peek(self) -> float:
        """The next time not yet consumed (``inf`` when none is left)."""
        if self._i == len(self._buf) and not self._refill():
            return math.inf
        return self._buf[self._i]

    def pop(self) -> float:
        """Consume the next time (call :meth:`peek` first); the one after it (``inf``
        when none is left)."""
        self.count += 1
        i = self._i = self._i + 1
        if i < len(self._buf):
            return self._buf[i]
        return self._buf[0] if self._refill() else math.inf

    def skip(self, k: int) -> int:
        """Consume up to ``k`` times, as ``k`` calls of :meth:`peek` then :meth:`pop`
        stopping at the last; how many were consumed."""
        done = 0
        while done < k:
            if self._i == len(self._buf) and not self._refill():
                break
            n = min(k - done, len(self._buf) - self._i)
            self._i += n
            self.count += n
            done += n
            if self._i == len(self._buf):
                self._refill()  # as pop() does after the last time of a block
        return done

    def take(self, k: int) -> list[float]:
        """Consume and return up to ``k`` times (fewer only at the end), as ``k`` calls
        of :meth:`peek` then :meth:`pop`."""
        out: list[float] = []
        while len(out) < k:
            if self._i == len(self._buf) and not self._refill():
                break
            n = min(k - len(out), len(self._buf) - self._i)
            out.extend(self._buf[self._i:self._i + n])
            self._i += n
            self.count += n
            if self._i == len(self._buf):
                self._refill()
        return out
