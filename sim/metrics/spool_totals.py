"""What a tier's summary needs from its spooled rows, gathered in one pass over each
spool (attempts, requests), chunk by chunk: counts, exact sums and order statistics, in
memory that does not grow with the run's length (:mod:`sim.metrics.stream_stats`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np

from ..model import recorder as rc
from ..model.engine import TierResult
from .stream_stats import ExactSum, OrderStatistics

_N_OUT = len(rc.OUTCOMES)


@dataclass
class AttemptTotals:
    """Totals over a tier's attempt rows.

    ``by_method_outcome[m, o]``: attempts of method ``m`` with outcome ``o``;
    ``settled_by_method[m]``: their settled CU (methods that had attempts);
    ``stream_wait_ms``: each attempt's wait for an HTTP/2 stream, in ms (zeros counted,
    not stored).
    """

    by_method_outcome: np.ndarray
    phantom: int = 0
    reserved: ExactSum = field(default_factory=ExactSum)
    settled: ExactSum = field(default_factory=ExactSum)
    settled_by_method: dict[int, ExactSum] = field(default_factory=dict)
    stream_wait_ms: OrderStatistics = field(
        default_factory=lambda: OrderStatistics(lower_bound=0.0))
    stream_wait_sum_ms: ExactSum = field(default_factory=ExactSum)
    stream_wait_max_ms: float = float("-inf")

    @property
    def outcomes(self) -> np.ndarray:
        """Attempts per outcome code."""
        return self.by_method_outcome.sum(axis=0)

    @property
    def count(self) -> int:
        return int(self.by_method_outcome.sum())

    @classmethod
    def of(cls, result: TierResult, n_methods: int) -> AttemptTotals:
        """One pass over ``result``'s attempt spool."""
        t = cls(np.zeros((n_methods, _N_OUT), dtype=np.int64))
        names = ["method", "outcome", "phantom", "cu_reserved", "cu_settled", "stream_wait_s"]
        for a in result.attempt_sink.chunks(names):
            method, outcome = a["method"].astype(np.int64), a["outcome"].astype(np.int64)
            if len(method) == 0:
                continue
            # every method code indexes plan.tables.methods (websocket paths included)
            t.by_method_outcome += np.bincount(
                method * _N_OUT + outcome, minlength=n_methods * _N_OUT
            ).reshape(n_methods, _N_OUT)
            t.phantom += int(a["phantom"].sum())
            t.reserved.add(a["cu_reserved"])
            settled = a["cu_settled"]
            t.settled.add(settled)
            for m in np.unique(method).tolist():
                t.settled_by_method.setdefault(m, ExactSum()).add(settled[method == m])
            wait = a["stream_wait_s"] * 1000.0
            t.stream_wait_ms.add(wait)
            t.stream_wait_sum_ms.add(wait)
            t.stream_wait_max_ms = max(t.stream_wait_max_ms, float(wait.max()))
        release_arrow()
        return t


@dataclass
class RequestTotals:
    """Totals over a tier's logical requests: outcomes, and the end-to-end latency (ms,
    first send to final reply) of those that succeeded."""

    outcomes: np.ndarray
    latency_ms: OrderStatistics = field(default_factory=OrderStatistics)
    latency_sum_ms: ExactSum = field(default_factory=ExactSum)

    @property
    def count(self) -> int:
        return int(self.outcomes.sum())

    @classmethod
    def of(cls, result: TierResult) -> RequestTotals:
        """One pass over ``result``'s request spool."""
        t = cls(np.zeros(_N_OUT, dtype=np.int64))
        for q in result.request_sink.chunks(["outcome", "t_first", "t_end"]):
            t.outcomes += np.bincount(q["outcome"].astype(np.int64), minlength=_N_OUT)
            ok = q["outcome"] == rc.OK
            latency = (q["t_end"][ok] - q["t_first"][ok]) * 1000.0
            t.latency_ms.add(latency)
            t.latency_sum_ms.add(latency)
        release_arrow()
        return t


def release_arrow() -> None:
    """Hand the Parquet reader's freed buffers back to the system (its allocator keeps
    them otherwise, and the process's peak grows with the run's length)."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
