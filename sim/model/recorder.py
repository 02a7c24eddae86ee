"""Columnar outcome buffers: one row per attempt and one per logical request.

Rows are appended to plain lists (the cheapest append in CPython) and turned into
numpy arrays once, at the end of a tier's run.
"""

from __future__ import annotations

import numpy as np

# Re-exported: the model reads the outcome codes as rc.OK, rc.THROTTLES etc.
from ..vocabulary import (  # noqa: F401
    AUTH_401,
    CONN_430,
    HTTP_434,
    OK,
    OUTCOMES,
    OVERSIZED,
    PAY_402,
    PROTO_421,
    RPC_32005,
    THROTTLES,
    WS_435,
    WS_CU,
)

ATTEMPT_COLUMNS = (
    ("request_id", np.int64), ("attempt", np.int16), ("source", np.int16),
    ("method", np.int16), ("key", np.int16), ("region", np.int16),
    ("t_send", np.float64), ("t_end", np.float64), ("outcome", np.int8),
    ("cu_reserved", np.float64), ("cu_settled", np.float64),
    ("retry_after_s", np.float64), ("phantom", np.bool_), ("stream_wait_s", np.float64),
)
REQUEST_COLUMNS = (
    ("request_id", np.int64), ("source", np.int16), ("method", np.int16),
    ("t_first", np.float64), ("t_end", np.float64), ("outcome", np.int8),
    ("attempts", np.int16),
)


class Recorder:
    """Appends attempt and logical-request rows; :meth:`arrays` exports them once."""

    def __init__(self) -> None:
        self.attempt_cols: tuple[list, ...] = tuple([] for _ in ATTEMPT_COLUMNS)
        self.request_cols: tuple[list, ...] = tuple([] for _ in REQUEST_COLUMNS)
        # Bound methods, so the hot path appends without attribute lookups.
        self._a = tuple(col.append for col in self.attempt_cols)
        self._r = tuple(col.append for col in self.request_cols)

    def attempt(self, rid, attempt, source, method, key, region, t_send, t_end, outcome,
                reserved, settled, retry_after, phantom, stream_wait) -> None:
        """Record one attempt (``retry_after`` is NaN when the reply carried none)."""
        a = self._a
        a[0](rid); a[1](attempt); a[2](source); a[3](method); a[4](key); a[5](region)
        a[6](t_send); a[7](t_end); a[8](outcome); a[9](reserved); a[10](settled)
        a[11](retry_after); a[12](phantom); a[13](stream_wait)

    def request(self, rid, source, method, t_first, t_end, outcome, attempts) -> None:
        """Record a logical request once it has its final outcome."""
        r = self._r
        r[0](rid); r[1](source); r[2](method); r[3](t_first); r[4](t_end); r[5](outcome)
        r[6](attempts)

    def arrays(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """``(attempts, requests)`` as dicts of typed numpy columns."""
        attempts = {name: np.asarray(col, dtype=dt)
                    for (name, dt), col in zip(ATTEMPT_COLUMNS, self.attempt_cols, strict=True)}
        requests = {name: np.asarray(col, dtype=dt)
                    for (name, dt), col in zip(REQUEST_COLUMNS, self.request_cols, strict=True)}
        return attempts, requests
