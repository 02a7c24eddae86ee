"""Exact statistics of a column read chunk by chunk, in memory bounded by a fixed budget
rather than by the column's length: a tier of a 14-hour replay has 20 million attempts,
and its figures must not need them all in memory at once.

* :class:`ExactSum`: the correctly rounded sum (as :func:`math.fsum` of every value),
  whatever the chunks; so a total does not depend on how the spool was cut.
* :class:`OrderStatistics`: values at given ranks of the sorted column, and percentiles
  as :func:`numpy.percentile` (``method="linear"``) computes them. Up to
  :data:`RUN_VALUES` values are kept in memory (sorted there, as before); beyond that,
  sorted runs are written to an unlinked temporary file and merged block by block, a
  fixed number of values in memory whatever the column's length.
"""

from __future__ import annotations

import math
import tempfile

import numpy as np

#: Values an :class:`OrderStatistics` keeps in memory before it writes a sorted run to
#: disk (16 MiB of float64).
RUN_VALUES = 1 << 21
#: Values the merge of the sorted runs holds at once, over all runs (16 MiB).
MERGE_VALUES = 1 << 21
_MIN_BLOCK = 1 << 14


class ExactSum:
    """The exact sum of every value added, correctly rounded to a float at the end.

    Each chunk's exact sum is kept as a few non-overlapping floats (:func:`math.fsum` of the
    chunk, then of what that left out, until nothing is); :attr:`value` is
    :func:`math.fsum` of all of them, which is the correctly rounded sum of every value.
    """

    def __init__(self) -> None:
        self._terms: list[float] = []

    def add(self, values: np.ndarray) -> None:
        """Add a chunk of values."""
        values = np.asarray(values, dtype=float)
        # Zeros change no sum (math.fsum([-0.0]) is 0.0 too): a throttled run's settled
        # CU and its stream waits are mostly zeros, cheaper to drop than to add.
        values = values[values != 0.0]
        if len(values) == 0:
            return
        chunk = values.tolist()
        terms: list[float] = []
        while True:
            s = math.fsum(chunk + [-t for t in terms])
            if s == 0.0 or not math.isfinite(s):
                if s != 0.0 or not terms:
                    terms.append(s)
                break
            terms.append(s)
        self._terms.extend(terms)

    @property
    def value(self) -> float:
        """The sum so far (0.0 for none)."""
        return math.fsum(self._terms)


class OrderStatistics:
    """Order statistics of a stream of float values (no NaN), exact, in bounded memory.

    ``lower_bound``: a value no value is below (checked) whose occurrences are counted,
    not stored (the stream-wait column is mostly zeros). ``run_values`` and
    ``merge_values``: the memory budgets (default :data:`RUN_VALUES`,
    :data:`MERGE_VALUES`).
    """

    def __init__(self, lower_bound: float | None = None, run_values: int | None = None,
                 merge_values: int | None = None) -> None:
        self.lower_bound = lower_bound
        # read when made (not when defined), so a test can make every column spill
        self.run_values = run_values or RUN_VALUES
        self.merge_values = merge_values or MERGE_VALUES
        self.count = 0
        self._at_bound = 0
        self._pending: list[np.ndarray] = []
        self._pending_n = 0
        self._file = None
        self._runs: list[tuple[int, int]] = []  # (first value's index in the file, values)
        self._written = 0

    def add(self, values: np.ndarray) -> None:
        """Add a chunk of values."""
        v = np.asarray(values, dtype=float)
        self.count += len(v)
        if self.lower_bound is not None and len(v):
            if v.min() < self.lower_bound:
                raise ValueError(f"a value below the lower bound {self.lower_bound}")
            at = v == self.lower_bound
            n_at = int(at.sum())
            if n_at:
                self._at_bound += n_at
                v = v[~at]
        if len(v) == 0:
            return
        self._pending.append(v.copy() if v.base is not None else v)
        self._pending_n += len(v)
        if self._pending_n >= self.run_values:
            self._spill()

    @property
    def count_at_lower_bound(self) -> int:
        """Values equal to ``lower_bound`` (counted, not stored)."""
        return self._at_bound

    @property
    def spilled(self) -> bool:
        """Whether sorted runs went to disk (the column did not fit :data:`RUN_VALUES`)."""
        return bool(self._runs)

    def _stored(self) -> np.ndarray:
        return np.concatenate(self._pending) if self._pending else np.empty(0)

    def _spill(self) -> None:
        run = self._stored()
        self._pending, self._pending_n = [], 0
        run.sort()
        if self._file is None:
            # closed by close() or when collected; unlinked from the start
            self._file = tempfile.TemporaryFile(prefix="capsim-order-")  # noqa: SIM115
        self._file.seek(self._written * 8)
        self._file.write(run.tobytes())
        self._runs.append((self._written, len(run)))
        self._written += len(run)

    def close(self) -> None:
        """Remove the runs on disk."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:
        self.close()

    def in_memory(self) -> np.ndarray | None:
        """Every value, unsorted, when none went to disk (else None)."""
        if self._runs:
            return None
        stored = self._stored()
        if not self._at_bound:
            return stored
        return np.concatenate([np.full(self._at_bound, self.lower_bound), stored])

    def values_at(self, ranks: np.ndarray) -> np.ndarray:
        """The values of 0-based ``ranks`` (any order, each in ``[0, count)``) in the
        sorted column."""
        ranks = np.asarray(ranks, dtype=np.int64)
        if len(ranks) and (ranks.min() < 0 or ranks.max() >= self.count):
            raise IndexError("rank outside the column")
        uniq, back = np.unique(ranks, return_inverse=True)
        out = np.empty(len(uniq))
        low = uniq < self._at_bound
        out[low] = self.lower_bound if self.lower_bound is not None else np.nan
        stored_ranks = uniq[~low] - self._at_bound
        if len(stored_ranks):
            if self._runs:
                out[~low] = self._merged_at(stored_ranks)
            else:
                out[~low] = np.sort(self._stored())[stored_ranks]
        return out[back]

    def _merged_at(self, ranks: np.ndarray) -> np.ndarray:
        """Values at sorted unique ``ranks`` of the stored values, by a block-by-block merge
        of the sorted runs (the values still pending become one more run)."""
        if self._pending:
            self._spill()
        runs = [_RunReader(self._file, first, n) for first, n in self._runs]
        block = max(_MIN_BLOCK, self.merge_values // len(runs))
        out = np.empty(len(ranks))
        emitted, ti = 0, 0
        while ti < len(ranks):
            for r in runs:
                r.refill(block)
            live = [r for r in runs if len(r.block)]
            # Every value not yet read from a run is >= its block's last value, so every
            # value <= the smallest such last value is already in memory.
            boundary = min(r.block[-1] for r in live)
            piece = np.sort(np.concatenate([r.take_through(boundary) for r in live]))
            upto = emitted + len(piece)
            tj = int(np.searchsorted(ranks, upto))
            out[ti:tj] = piece[ranks[ti:tj] - emitted]
            ti, emitted = tj, upto
        return out

    def percentile(self, q) -> np.ndarray:
        """``numpy.percentile(column, q)`` (linear method), from at most two order
        statistics per ``q``."""
        if not self._runs and self.count <= self.run_values:  # small: numpy's own
            return np.percentile(self.in_memory(), q)
        return _linear_percentile(self.values_at, self.count, q)

    def ecdf_table(self, points: int) -> np.ndarray:
        """The column's empirical CDF in at most ``points`` numbers: the whole sorted
        column when it has at most ``points`` values, else the order statistics of rank
        ``ceil(k n / points)``, k = 1..points (a line through ``(table[k-1], k/points)``
        lies on the exact CDF)."""
        n = self.count
        if n <= points:
            return self.values_at(np.arange(n))
        ranks = -(-np.arange(1, points + 1, dtype=np.int64) * n // points)  # ceil(k n / points)
        return self.values_at(ranks - 1)


class _RunReader:
    """One sorted run of the file, read a block at a time."""

    def __init__(self, file, first: int, n: int) -> None:
        self.file, self.next, self.end = file, first, first + n
        self.block = np.empty(0)

    def refill(self, size: int) -> None:
        if len(self.block) or self.next >= self.end:
            return
        k = min(size, self.end - self.next)
        buf = np.empty(k)
        self.file.seek(self.next * 8)
        self.file.readinto(memoryview(buf).cast("B"))
        self.block, self.next = buf, self.next + k

    def take_through(self, boundary: float) -> np.ndarray:
        j = int(np.searchsorted(self.block, boundary, side="right"))
        taken, self.block = self.block[:j], self.block[j:]
        return taken


def _linear_percentile(values_at, n: int, q) -> np.ndarray:
    """numpy's ``percentile(x, q)`` (method ``linear``: Hyndman and Fan's 7th) of a column
    of ``n`` values whose order statistics ``values_at(ranks)`` gives, computed as
    numpy 1.22+ computes it (its virtual index, its bounds and its two-sided lerp)."""
    quantiles = np.true_divide(np.asarray(q, dtype=float), 100)
    virtual = (n - 1) * quantiles
    previous = np.floor(virtual)
    nxt = previous + 1
    above = virtual >= n - 1
    previous[above] = n - 1
    nxt[above] = n - 1
    below = virtual < 0
    previous[below] = 0
    nxt[below] = 0
    gamma = virtual - np.where(above, -1, previous)  # numpy's gamma (its -1 means "last")
    prev_i, next_i = previous.astype(np.int64), nxt.astype(np.int64)
    vals = values_at(np.concatenate([prev_i, next_i]))
    a, b = vals[:len(prev_i)], vals[len(prev_i):]
    diff = b - a
    out = a + diff * gamma
    hi = gamma >= 0.5
    out[hi] = (b - diff * (1 - gamma))[hi]
    return out
