"""Scaling a recording over a run: loops (``repeat = "tile"``), copies spread over the
recording's period (``copies_spread = "period"``), loops thinned by the UTC hour.

These act on the rows of :class:`~sim.traces.replay.ReplayStream` after the time range and
the recorded retries, before the load multiplier's copies:

* **period** P: ``period_s`` when given, else the recording's length plus one mean gap
  between its requests, ``(last - first) / speed * n / (n - 1)`` for its n rows, so that a
  loop keeps the recording's mean rate and the first request of a loop follows the last
  of the one before by a mean gap. A recording of one row (or of rows all at one instant)
  has no period: ``period_s`` must say it.
* **tiles**: loop j (j = 0, 1, ...) is the recording shifted by ``j * P`` seconds, for
  every loop that starts before the run ends (``j * P + phase_shift_s < duration``).
  Loops never overlap (P is longer than the recording), so the loops in order are in time
  order. With ``hourly_weights`` (24 factors, one per UTC hour), loop j is kept with
  probability ``w[h] / max(w)``, h the UTC hour at its start, one uniform per loop in loop
  order from the stream ``(source, name, replay, tile)``.
* **copies spread over the period**: of the load multiplier's n copies, copy 0 is
  unshifted and copy c >= 1 is shifted by ``P * (c + u_c) / n``, u_c uniform in [0, 1)
  from the stream ``(source, name, replay, spread)`` in copy order: one copy in each n-th
  of the period, so that the copies never stack into one window as the default spread
  (``"window"``: a random 0-12 s each) does to a short recording.

Memory: a recording of at most :data:`HOLD_ROWS` rows (counted in the file) is read once
and its rows held for every loop; a longer one is streamed again from the file for each
loop, a row group at a time, so that no loop holds more than the stream holds anyway.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..core.errors import CapsimError
from ..core.vocabulary import DAY_S, HOUR_S

#: The columns of a row group of a replay stream (times ``t`` in integer ns of the file).
STREAM_COLUMNS = ("t", "api", "method", "key", "region", "items", "profiles", "gas_used", "cu")

#: Rows (of the file) up to which a tiled recording is held in memory for every loop
#: rather than streamed again per loop: one slice of the stream, what it holds anyway.
HOLD_ROWS = 1 << 16


@dataclass(frozen=True)
class Scaling:
    """How a stream spreads and loops the recording (see the module doc).

    ``until_s``: the run's duration (loops start before it); ``day_offset_s``: seconds
    since 00:00 UTC at t = 0 (for ``hourly_weights``); ``spread_rng`` / ``tile_rng``: the
    named streams of the copies' offsets and the loops' thinning.
    """

    repeat: str = "none"
    period_s: float | None = None
    copies_spread: str = "window"
    hourly_weights: tuple[float, ...] | None = None
    until_s: float = math.inf
    day_offset_s: float = 0.0
    spread_rng: np.random.Generator | None = None
    tile_rng: np.random.Generator | None = None
    file: str | None = None  # where an error names the period: the scenario file
    field: str = "replay.period_s"  # and its key path

    @property
    def tiled(self) -> bool:
        return self.repeat == "tile"

    @property
    def uses_period(self) -> bool:
        return self.tiled or self.copies_spread == "period"


def recording_period(first_ns: int, last_ns: int, rows: int, speed: float, *,
                     file: str | None = None, field: str = "replay.period_s") -> float:
    """The default period (seconds of replay): the recording's length plus one mean gap."""
    if rows < 2 or last_ns <= first_ns:
        raise CapsimError("the recording has no length to loop or spread over (one row, or "
                          "every row at one instant): expected period_s, the loop's length "
                          "in seconds", file=file, field=field)
    return (last_ns - first_ns) / 1e9 / speed * rows / (rows - 1)


def period_offsets(n_copies: int, period_s: float, rng: np.random.Generator) -> list[float]:
    """Offsets of the load multiplier's copies spread over the period (copy 0 at 0)."""
    return [0.0] + [period_s * (c + float(rng.uniform())) / n_copies
                    for c in range(1, n_copies)]


def tile_keep(weights: tuple[float, ...] | None, starts: float, day_offset_s: float,
              rng: np.random.Generator | None) -> bool:
    """Whether the loop starting at ``starts`` (simulation seconds) is kept."""
    if weights is None:
        return True
    hour = int(((starts + day_offset_s) % DAY_S) // HOUR_S)
    return float(rng.uniform()) < weights[hour] / max(weights)


def tiled_rows(stream, scaling: Scaling, until_s: float, count: bool = True
               ) -> Iterator[dict[str, np.ndarray]]:
    """The stream's base rows looped over the run: each piece of loop j carries
    ``tile_b`` = ``j * P`` per row (seconds added to its replay time). ``count``: this
    pass counts the recorded retries dropped (once, not per loop)."""
    period = stream.period_s()
    end = min(until_s, scaling.until_s)
    held = None
    if stream.file_rows <= HOLD_ROWS:
        held = list(stream._base_rows(math.inf, count))
    tile_rng = copy.deepcopy(scaling.tile_rng)
    counted: list[int] = []  # recorded retries are the recording's: counted once, not per loop
    try:
        j = 0
        while True:
            offset = j * period
            if offset + stream.shift >= end:
                return
            j += 1
            if not tile_keep(scaling.hourly_weights, offset + stream.shift,
                             scaling.day_offset_s, tile_rng):
                continue
            pieces = (held if held is not None
                      else stream._base_rows(until_s - offset, count))
            for got in pieces:
                out = dict(got)
                out["tile_b"] = np.full(len(got["t"]), offset)
                yield out
            if count and not counted:
                counted.append(stream.dropped_retries)
    finally:
        if counted:
            stream.dropped_retries = counted[0]


def spread_apart(stream, n_copies: int) -> bool:
    """Whether the copies, spread over the period, are read as passes of their own: a
    recording of more than :data:`HOLD_ROWS` rows, whose period the one-pass merge of
    the copies would hold whole."""
    return (stream.scaling.copies_spread == "period" and n_copies > 1
            and stream.file_rows > HOLD_ROWS)


def merged_copies(stream, until_s: float, offsets: list[float], thin: int, frac: float,
                  rng: np.random.Generator) -> Iterator[dict[str, np.ndarray]]:
    """The stream's pieces (as :meth:`~sim.traces.replay.ReplayStream.chunks` gives them)
    with every copy read by a pass of its own and the passes merged by time: memory of a
    piece per copy, not of the period between the first copy and the last. The rows, their
    order (time, then copy) and the thinned copy's draws (one per row of its pass, in order)
    are those of the one-pass merge."""
    n = len(offsets)
    passes = [stream.copy_rows(until_s - offsets[c], count=c == 0) for c in range(n)]
    t0: list[int] = []

    def pull(c: int) -> dict[str, np.ndarray] | None:
        for got in passes[c]:
            if not t0:
                t0.append(int(got["t"][0]))
            b = (got["t"] - t0[0]).astype(np.float64) / 1e9 / stream.speed
            if "tile_b" in got:
                b += got["tile_b"]
            rows = np.arange(len(b))
            if c == thin:
                rows = rows[rng.random(len(b)) < frac]
            if len(rows):
                out = {"t_s": (b[rows] + offsets[c]) + stream.shift,
                       "copy": np.full(len(rows), c, dtype=np.int16)}
                out.update({name: got[name][rows] for name in STREAM_COLUMNS[1:]})
                return out
        return None

    held: list[dict[str, np.ndarray] | None] = []
    for c in range(n):  # copy 0 first: its first row is the origin
        held.append(pull(c))
    stream.t0_ns = t0[0] if t0 else 0
    done = [h is None for h in held]
    while True:
        for c in range(n):  # a copy whose rows all wait for the bound reads on
            h = held[c]
            while not done[c] and (h is None or h["t_s"][0] >= h["t_s"][-1]):
                more = pull(c)
                if more is None:
                    done[c] = True
                    break
                h = more if h is None else {k: np.concatenate((h[k], more[k])) for k in h}
            held[c] = h
        live = [c for c in range(n) if held[c] is not None]
        if not live:
            return
        bound = min((float(held[c]["t_s"][-1]) for c in live if not done[c]), default=math.inf)
        parts = []
        for c in live:
            h = held[c]
            e = int(np.searchsorted(h["t_s"], bound, side="left"))
            if e:
                parts.append({k: v[:e] for k, v in h.items()})
                held[c] = {k: v[e:] for k, v in h.items()} if e < len(h["t_s"]) else None
        if parts:
            out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
            if len(parts) > 1:
                order = np.argsort(out["t_s"], kind="stable")
                out = {k: v[order] for k, v in out.items()}
            yield out
        if bound >= until_s:
            return
