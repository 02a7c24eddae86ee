"""Running aggregates of a tier's attempts, kept as the run goes, for the plots.

The report draws attempts per minute by outcome and marks refused websocket
handshakes; neither needs every attempt. :class:`MinuteOutcomes` sees each chunk of
attempt rows once and keeps, per (minute, outcome), the count and the latest send time
(so a plot's time axis still ends where the last attempt was sent), plus the send
times of refused handshakes, which are few.
"""

from __future__ import annotations

import numpy as np

from ..core.vocabulary import OUTCOMES, WS_435, WS_CU

BIN_S = 60.0
_N_OUT = len(OUTCOMES)
_REFUSED = np.array([WS_435, WS_CU])


def minute_of(t: np.ndarray, bin_s: float = BIN_S) -> np.ndarray:
    """The bin ``k`` with ``k * bin_s <= t < (k + 1) * bin_s``, exactly as the
    comparisons of ``np.histogram`` put it (``t / bin_s`` can round across an edge)."""
    k = np.floor(t / bin_s)
    k -= k * bin_s > t
    k += (k + 1) * bin_s <= t
    return k.astype(np.int64)


class MinuteOutcomes:
    """Attempts per (minute, outcome) and the refused handshakes, from chunks of rows."""

    def __init__(self) -> None:
        self._count: dict[int, int] = {}
        self._last: dict[int, float] = {}
        self._refused_t: list[np.ndarray] = []
        self._refused_outcome: list[np.ndarray] = []

    def __call__(self, chunk: dict[str, np.ndarray]) -> None:
        t, outcome = chunk["t_send"], chunk["outcome"].astype(np.int64)
        if len(t) == 0:
            return
        key = minute_of(t) * _N_OUT + outcome
        order = np.argsort(key, kind="stable")
        key, ts = key[order], t[order]
        first = np.flatnonzero(np.append(True, key[1:] != key[:-1]))
        counts = np.diff(np.append(first, len(key)))
        latest_t = np.maximum.reduceat(ts, first)
        count, latest = self._count, self._last
        for k, n, tl in zip(key[first].tolist(), counts.tolist(), latest_t.tolist(), strict=True):
            count[k] = count.get(k, 0) + n
            if tl > latest.get(k, -np.inf):
                latest[k] = tl
        refused = np.isin(chunk["outcome"], _REFUSED)
        if refused.any():
            self._refused_t.append(t[refused])
            self._refused_outcome.append(chunk["outcome"][refused])

    def table(self) -> dict[str, np.ndarray]:
        """Columns ``t_send`` (latest send of the bin), ``outcome``, ``count``, one row per
        non-empty (minute, outcome), in (minute, outcome) order."""
        keys = np.array(sorted(self._count), dtype=np.int64)
        return {
            "t_send": np.array([self._last[k] for k in keys.tolist()], dtype=float),
            "outcome": (keys % _N_OUT).astype(np.int8),
            "count": np.array([self._count[k] for k in keys.tolist()], dtype=np.int64),
        }

    def refused_handshakes(self) -> dict[str, np.ndarray]:
        """``t_send`` and ``outcome`` of every handshake refused with 435 or ws_cu_rejected."""
        if not self._refused_t:
            return {"t_send": np.empty(0), "outcome": np.empty(0, dtype=np.int8)}
        return {"t_send": np.concatenate(self._refused_t),
                "outcome": np.concatenate(self._refused_outcome)}
