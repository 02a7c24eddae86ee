"""Loading a canonical trace for replay by the simulator.

:func:`load_replay` reads only the columns it needs, chunk by chunk, and keeps numeric
arrays (plus one shared string object per distinct profile list), so memory grows with
the kept rows only. Transforms, in this order:

1. **time range** ``(start, end)``: keep requests with ``start <= t - t_start < end``
   seconds, where ``t_start`` is the first request of the whole trace.
2. **recorded retries** (``drop_recorded_retries``): rows are grouped by key, method and
   ``body_hash`` (or, for rows without a ``body_hash``, by key, method, items and
   profiles) and ordered by time, then file order; "refused" means refused by a limit
   (:data:`~sim.core.vocabulary.LIMIT_STATUSES`: 434, -32005, 430, 435). A row *with* a
   ``body_hash`` is a recorded retry when an earlier row of its group was refused at most
   ``retry_window_s`` seconds before it (the body identifies the request). A row
   *without* one is a recorded retry only when the row just before it in its group was
   refused at most ``retry_window_s`` seconds before it: without a body every call of a
   key looks alike, so one refusal explains one retry, not every later call of the key.
   Recorded retries are dropped, so that the simulator's own retry policy produces them;
   a dropped retry that was itself refused still marks later ones (a chain refused,
   refused, admitted drops both retries). Rows up to ``retry_window_s`` before the range
   start count as earlier rows.
3. **origin**: ``t0_ns`` is the epoch ns of the first request left; times become
   seconds since it, divided by ``speed`` (``speed=2`` halves every inter-arrival time).
4. **load multiplier** ``k``: ``floor(k)`` superposed copies of the trace plus one copy
   thinned to a fraction ``k - floor(k)`` (each row kept with that probability; ``k < 1``
   is pure thinning). Copy 0 is unshifted; every other copy is shifted by its own offset
   drawn uniformly from [0, 12) seconds, so copies do not land on the same instants.
   Random draws from ``rng``, in this order: one offset per shifted copy, in copy order,
   then one uniform per row of the thinned copy.
5. **phase shift**: ``phase_shift_s`` (>= 0) is added to every time, moving requests
   relative to window boundaries: the epoch time of a request at speed 1 becomes
   ``t0_ns + t_s * 1e9``, its recorded time plus the shift.

:class:`ReplayStream` can also loop the recording over the run and spread the copies
over its period instead of 12 s (:mod:`.tiling`: ``repeat``, ``copies_spread``, its
:class:`~sim.traces.tiling.Scaling`); without one it gives exactly the rows above.

The result is sorted by ``t_s`` (stable: copy order, then time order, breaks ties).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import CapsimError
from ..core.vocabulary import LIMIT_STATUSES
from .schema import APIS, open_trace
from .tiling import (
    STREAM_COLUMNS,
    Scaling,
    merged_copies,
    period_offsets,
    recording_period,
    spread_apart,
    tiled_rows,
)

SHIFT_RANGE_S = 12.0
_HEX_VALUES = np.zeros(256, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX_VALUES[_c] = _i


@dataclass(frozen=True)
class ReplayTrace:
    """Arrival times and request attributes for replay, one entry per request.

    ``api``, ``method``, ``key`` and ``region`` are integer codes into the matching
    ``*_categories`` tuples (``region`` is -1 when unknown); ``api_categories`` is always
    ``("rpc", "search", "streams")``, the others are sorted. ``items`` is 0 and
    ``gas_used`` / ``cu`` are NaN when unknown; ``profiles`` is an object array of
    comma-separated profile strings (None when unknown). ``copy`` tells which copy of the
    load multiplier a row belongs to. ``t0_ns`` is the epoch ns of ``t_s == 0``.
    """

    t_s: np.ndarray
    api: np.ndarray
    method: np.ndarray
    key: np.ndarray
    region: np.ndarray
    items: np.ndarray
    profiles: np.ndarray
    gas_used: np.ndarray
    cu: np.ndarray
    copy: np.ndarray
    api_categories: tuple[str, ...]
    method_categories: tuple[str, ...]
    key_categories: tuple[str, ...]
    region_categories: tuple[str, ...]
    t0_ns: int
    dropped_retries: int
    speed: float
    load_multiplier: float
    phase_shift_s: float

    def __len__(self) -> int:
        return len(self.t_s)


class _Categories:
    """Global codes for a dictionary column read chunk by chunk."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def encode(self, col) -> np.ndarray:
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if not pa.types.is_dictionary(col.type):
            col = pc.dictionary_encode(col)
        lut = np.array([self.codes.setdefault(v, len(self.codes))
                        for v in col.dictionary.to_pylist()] + [-1], dtype=np.int32)
        return lut[np.asarray(pc.fill_null(col.indices, -1).to_numpy(zero_copy_only=False))]

    def sorted(self, codes: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
        """Codes renumbered to the sorted categories that occur in ``codes``."""
        used = np.bincount(codes[codes >= 0], minlength=len(self.codes)) > 0
        names = sorted(name for name, c in self.codes.items() if used[c])
        remap = np.full(len(self.codes) + 1, -1, dtype=np.int32)
        for new, name in enumerate(names):
            remap[self.codes[name]] = new
        return remap[codes], tuple(names)


def _hash64(col) -> tuple[np.ndarray, np.ndarray]:
    """body_hash (16 hex digits) as uint64, plus a has-hash mask."""
    has = np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
    filled = pc.fill_null(col, "0" * 16).cast(pa.string())
    if isinstance(filled, pa.ChunkedArray):
        filled = filled.combine_chunks()
    offsets = np.frombuffer(filled.buffers()[1], dtype=np.int32)[
        filled.offset:filled.offset + len(filled) + 1]
    data = np.frombuffer(filled.buffers()[2], dtype=np.uint8)
    if len(filled) == 0:
        return np.zeros(0, dtype=np.uint64), has
    if not np.all(np.diff(offsets) == 16):
        raise CapsimError("body_hash values must be 16 hex digits", field="body_hash")
    nibbles = _HEX_VALUES[data[offsets[0]:offsets[-1]]].reshape(-1, 16)
    packed = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]  # 8 bytes per row, big-endian
    return np.ascontiguousarray(packed).view(">u8").ravel().astype(np.uint64), has


def _check(speed, load_multiplier, phase_shift_s, time_range_s, retry_window_s) -> None:
    def bad(name: str, what: str) -> None:
        raise CapsimError(f"expected {what}", field=name)

    if not (isinstance(speed, int | float) and math.isfinite(speed) and speed > 0):
        bad("speed", "a finite number > 0")
    if not (math.isfinite(load_multiplier) and load_multiplier > 0):
        bad("load_multiplier", "a finite number > 0")
    if not (math.isfinite(phase_shift_s) and phase_shift_s >= 0):
        bad("phase_shift_s", "a finite number >= 0")
    if not (math.isfinite(retry_window_s) and retry_window_s >= 0):
        bad("retry_window_s", "a finite number >= 0")
    if time_range_s is not None:
        start, end = time_range_s
        if not (math.isfinite(start) and start >= 0 and end > start):
            bad("time_range_s", "(start, end) seconds with 0 <= start < end")


def _retry_mask(t, key, method, sig, has_hash, refused, window_ns
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(recorded retries, rows that can mark a later row)`` by the rule in the module
    doc; ``t`` sorted ascending, rows in time then file order.

    The rows that can mark a later row are the refused rows with a body hash and, of the
    groups without one, the refused last row of each group: what a later piece of the
    trace needs to know of this one (the stream's carry).
    """
    n = len(t)
    if n == 0 or not refused.any():
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    order = np.lexsort((np.arange(n), t, sig, has_hash, method, key))
    k, m, s, h = key[order], method[order], sig[order], has_hash[order]
    ts, th = t[order], refused[order]
    # with a body hash: the last refused row of the group before this one
    last = np.maximum.accumulate(np.where(th, np.arange(n), -1))
    prev = np.empty(n, dtype=np.int64)
    prev[0] = -1
    prev[1:] = last[:-1]
    ok = prev >= 0
    p = np.where(ok, prev, 0)
    same = ok & (k[p] == k) & (m[p] == m) & (s[p] == s) & (h[p] == h)
    by_hash = same & (ts - ts[p] <= window_ns)
    # without one: the row just before this one in its group, if it was refused (a
    # refusal explains one retry; the rows of a key all look alike without a body)
    same_prev = np.zeros(n, dtype=bool)
    same_prev[1:] = (k[1:] == k[:-1]) & (m[1:] == m[:-1]) & (s[1:] == s[:-1]) & (
        h[1:] == h[:-1])
    by_prev = np.zeros(n, dtype=bool)
    by_prev[1:] = same_prev[1:] & th[:-1] & (ts[1:] - ts[:-1] <= window_ns)
    retry_sorted = np.where(h, by_hash, by_prev)
    last_of_group = np.ones(n, dtype=bool)
    last_of_group[:-1] = ~same_prev[1:]
    marks_sorted = th & (h | last_of_group)
    retry = np.zeros(n, dtype=bool)
    retry[order] = retry_sorted
    marks = np.zeros(n, dtype=bool)
    marks[order] = marks_sorted
    return retry, marks


def load_replay(path: str | os.PathLike, *, speed: float = 1.0, load_multiplier: float = 1.0,
                phase_shift_s: float = 0.0, time_range_s: tuple[float, float] | None = None,
                drop_recorded_retries: bool = True, retry_window_s: float = 60.0,
                rng: np.random.Generator, chunk_rows: int = 1 << 18) -> ReplayTrace:
    """Load the canonical trace at ``path`` for replay (transforms in the module doc)."""
    _check(speed, load_multiplier, phase_shift_s, time_range_s, retry_window_s)
    pf = open_trace(path)
    try:
        return _load(pf, speed, load_multiplier, phase_shift_s, time_range_s,
                     drop_recorded_retries, retry_window_s, rng, chunk_rows)
    finally:
        pf.close()


def _trace_start(pf) -> int | None:
    idx = pf.schema_arrow.get_field_index("time_ns")
    mins = []
    for g in range(pf.metadata.num_row_groups):
        col = pf.metadata.row_group(g).column(idx)
        stats = col.statistics
        if col.num_values and (stats is None or not stats.has_min_max):
            mins = None
            break
        if col.num_values:
            mins.append(stats.min)
    if mins is not None:
        return min(mins) if mins else None
    starts = [int(pc.min(b.column(0)).as_py()) for b in pf.iter_batches(columns=["time_ns"])
              if b.num_rows]
    return min(starts) if starts else None


class _Growing:
    """Per-column numpy buffers filled chunk by chunk (preallocated when the row count
    is known, so that no concatenation doubles the peak)."""

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        self.n = 0
        self.cols: dict[str, np.ndarray] = {}
        self.parts: dict[str, list[np.ndarray]] = {}

    def append(self, got: dict[str, np.ndarray]) -> None:
        m = len(got["t"])
        for name, arr in got.items():
            if self.capacity is None:
                self.parts.setdefault(name, []).append(arr)
            else:
                if name not in self.cols:
                    self.cols[name] = np.empty(self.capacity, dtype=arr.dtype)
                self.cols[name][self.n:self.n + m] = arr
        self.n += m

    def arrays(self) -> dict[str, np.ndarray]:
        if self.capacity is None:
            out = {name: np.concatenate(arrs) for name, arrs in self.parts.items()}
            self.parts.clear()
            return out
        return {name: arr[:self.n] for name, arr in self.cols.items()}


def _np(arr, dtype) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F),
        np.uint64(0x165667B19E3779F9))


def _retry_candidates(key, method, sig, refused) -> np.ndarray:
    """Indices of rows sharing a signature with some row refused by a limit: a superset
    of the recorded retries (small when refusals are rare), checked exactly afterwards.

    A 2**24-entry table of hashed signatures filters first, so the exact sorted look-up
    runs on the few rows that pass it. Temporaries are reused to keep the peak low.
    """
    mix = sig * _MIX[0]
    tmp = key.astype(np.uint64)
    tmp *= _MIX[1]
    mix ^= tmp
    tmp[:] = method
    tmp *= _MIX[2]
    mix ^= tmp
    np.right_shift(mix, np.uint64(40), out=tmp)
    low = tmp.view(np.int64)
    table = np.zeros(1 << 24, dtype=bool)
    table[low[refused]] = True
    idx = np.flatnonzero(table[low])
    del tmp, low, table
    marks = np.unique(mix[refused])
    sub = mix[idx]
    del mix
    pos = np.minimum(np.searchsorted(marks, sub), len(marks) - 1)
    return idx[marks[pos] == sub]


def _load(pf, speed, k, shift, time_range_s, drop_retries, retry_window_s, rng, chunk_rows):
    window_ns = round(retry_window_s * 1e9)
    start_ns = _trace_start(pf)
    lo = hi = None
    if start_ns is not None and time_range_s is not None:
        lo = start_ns + round(time_range_s[0] * 1e9)
        hi = start_ns + round(time_range_s[1] * 1e9)
    read_lo = lo - window_ns if (lo is not None and drop_retries) else lo
    cols = ["time_ns", "api", "method", "key", "region", "items", "profiles", "gas_used", "cu"]
    if drop_retries:
        cols += ["status", "body_hash"]
    cats = {name: _Categories() for name in ("method", "key", "region", "profiles")}
    api_lut = {name: i for i, name in enumerate(APIS)}
    limit_codes = pa.array(LIMIT_STATUSES, pa.int32())
    buf = _Growing(pf.metadata.num_rows if read_lo is None else None)
    for batch in pf.iter_batches(batch_size=chunk_rows, columns=cols):
        t = _np(batch.column("time_ns"), np.int64)
        if read_lo is not None:
            sel = (t >= read_lo) & (t < hi)
            if not sel.any():
                continue
            batch = batch.filter(pa.array(sel))
            t = t[sel]
        api = batch.column("api")
        if not pa.types.is_dictionary(api.type):
            api = pc.dictionary_encode(api)
        lut = np.array([api_lut[v] for v in api.dictionary.to_pylist()] + [-1], dtype=np.int8)
        got = {"t": t, "api": lut[_np(pc.fill_null(api.indices, -1), np.int64)],
               "items": _np(pc.fill_null(batch.column("items"), 0), np.int32),
               "gas_used": _np(batch.column("gas_used").cast(pa.float64()), np.float64),
               "cu": _np(batch.column("cu"), np.float64)}
        for name, cat in cats.items():
            got[name] = cat.encode(batch.column(name))
        if drop_retries:
            got["refused"] = _np(pc.fill_null(pc.is_in(batch.column("status"),
                                                         limit_codes), False), bool)
            got["hash"], got["has_hash"] = _hash64(batch.column("body_hash"))
        buf.append(got)
    if buf.n == 0:
        return _empty(speed, k, shift)
    data = buf.arrays()
    del buf
    if not np.all(data["t"][1:] >= data["t"][:-1]):
        order = np.argsort(data["t"], kind="stable")
        data = {name: arr[order] for name, arr in data.items()}
        del order

    dropped = 0
    keep = data["t"] >= lo if lo is not None else None
    if drop_retries and data["refused"].any():
        # without a body hash, a request is identified by its items and profiles; the
        # signature overwrites the hash column in place (it is not needed afterwards)
        sig = data["hash"]
        no_hash = np.flatnonzero(~data["has_hash"])
        sig[no_hash] = ((data["profiles"][no_hash].astype(np.int64) + 1).astype(np.uint64)
                        << np.uint64(32) | data["items"][no_hash].astype(np.uint64))
        del no_hash
        idx = _retry_candidates(data["key"], data["method"], sig, data["refused"])
        retry = np.zeros(len(sig), dtype=bool)
        retry[idx] = _retry_mask(data["t"][idx], data["key"][idx], data["method"][idx],
                                 sig[idx], data["has_hash"][idx], data["refused"][idx],
                                 window_ns)[0]
        del sig, idx
        if keep is not None:
            retry &= keep
        dropped = int(retry.sum())
        keep = ~retry if keep is None else keep & ~retry
    names = ("t", "api", "method", "key", "region", "items", "profiles", "gas_used", "cu")
    data = {name: data[name] for name in names}  # frees the retry-only columns
    if keep is not None and not keep.all():
        data = {name: arr[keep] for name, arr in data.items()}
    del keep
    if len(data["t"]) == 0:
        return _empty(speed, k, shift, dropped)
    t0_ns = int(data["t"][0])
    base = (data["t"] - t0_ns).astype(np.float64) / 1e9 / speed
    n = len(base)
    n_full = math.floor(k)
    frac = k - n_full
    offsets = [0.0] + [float(rng.uniform(0.0, SHIFT_RANGE_S)) for _ in range(1, n_full)]
    if frac > 0 and n_full >= 1:
        offsets.append(float(rng.uniform(0.0, SHIFT_RANGE_S)))
    if n_full == 1 and frac == 0:
        idx, t_s, copy = None, base + shift, np.zeros(n, dtype=np.int16)
    else:
        pieces_idx, pieces_t, pieces_copy = [], [], []
        for c in range(n_full):
            pieces_idx.append(np.arange(n))
            pieces_t.append(base + offsets[c])
            pieces_copy.append(np.full(n, c, dtype=np.int16))
        if frac > 0:
            kept = np.flatnonzero(rng.random(n) < frac)
            pieces_idx.append(kept)
            pieces_t.append(base[kept] + (offsets[n_full] if n_full >= 1 else 0.0))
            pieces_copy.append(np.full(len(kept), n_full, dtype=np.int16))
        idx = np.concatenate(pieces_idx)
        t_s = np.concatenate(pieces_t) + shift
        copy = np.concatenate(pieces_copy)
        if len(pieces_idx) > 1:
            order = np.argsort(t_s, kind="stable")
            idx, t_s, copy = idx[order], t_s[order], copy[order]
    del base

    def pick(arr: np.ndarray) -> np.ndarray:
        return arr if idx is None else arr[idx]

    method, method_cats = cats["method"].sorted(pick(data["method"]))
    key, key_cats = cats["key"].sorted(pick(data["key"]))
    region, region_cats = cats["region"].sorted(pick(data["region"]))
    profile_names = np.array([*sorted(cats["profiles"].codes,
                                      key=cats["profiles"].codes.__getitem__), None],
                             dtype=object)
    return ReplayTrace(
        t_s=t_s, api=pick(data["api"]), method=method, key=key, region=region,
        items=pick(data["items"]), profiles=profile_names[pick(data["profiles"])],
        gas_used=pick(data["gas_used"]), cu=pick(data["cu"]), copy=copy,
        api_categories=APIS, method_categories=method_cats, key_categories=key_cats,
        region_categories=region_cats, t0_ns=t0_ns, dropped_retries=dropped, speed=speed,
        load_multiplier=k, phase_shift_s=shift)


def _empty(speed, k, shift, dropped: int = 0) -> ReplayTrace:
    z = np.zeros(0)
    return ReplayTrace(
        t_s=z, api=np.zeros(0, np.int8), method=np.zeros(0, np.int32),
        key=np.zeros(0, np.int32), region=np.zeros(0, np.int32), items=np.zeros(0, np.int32),
        profiles=np.zeros(0, object), gas_used=z, cu=z, copy=np.zeros(0, np.int16),
        api_categories=APIS, method_categories=(), key_categories=(), region_categories=(),
        t0_ns=0, dropped_retries=dropped, speed=speed, load_multiplier=k,
        phase_shift_s=shift)


# --- streaming: the same transforms, a row group at a time ---------------------------

#: Rows the stream's steps after the merge work on at a time (a row group is read whole,
#: then handed on in slices of this many rows).
SLICE_ROWS = 1 << 16


class ReplayStream:
    """A canonical trace replayed a piece at a time, in time order: the rows of
    :func:`load_replay` (same transforms, same random draws, same order), with memory
    that does not grow with the trace's length.

    Row groups are read in the order of their first time (Parquet statistics) and merged:
    a group is read when the merge reaches its first time, so only groups whose time
    ranges overlap are in memory together (one at a time for a trace in time order, as
    ``capsim trace import`` writes them from a source in time order; a file whose every
    group spans the whole trace is held whole, as before). Rows of equal time keep the
    file's order, as the in-memory load's stable sort does.

    :meth:`chunks` yields dicts of columns (``t_s``, ``copy``, ``api`` and the raw codes
    of ``method``, ``key``, ``region``, ``profiles``, plus ``items``, ``gas_used``,
    ``cu``), sorted by ``t_s``; the raw codes index :attr:`names` (first-seen order, the
    same on every pass). Each call starts afresh with a copy of ``rng``. After a full
    pass, :attr:`t0_ns` and :attr:`dropped_retries` are set. ``until_s``: stop once every
    row left would have ``t_s >= until_s`` (rows at or past it may still be yielded).
    """

    def __init__(self, path: str | os.PathLike, *, speed: float = 1.0,
                 load_multiplier: float = 1.0, phase_shift_s: float = 0.0,
                 time_range_s: tuple[float, float] | None = None,
                 drop_recorded_retries: bool = True, retry_window_s: float = 60.0,
                 rng: np.random.Generator, scaling: Scaling | None = None) -> None:
        _check(speed, load_multiplier, phase_shift_s, time_range_s, retry_window_s)
        self.path = path
        self.scaling = scaling or Scaling()
        self._period_s: float | None = self.scaling.period_s
        self.speed, self.k, self.shift = speed, load_multiplier, phase_shift_s
        self.time_range_s = time_range_s
        self.drop_retries = drop_recorded_retries
        self.window_ns = round(retry_window_s * 1e9)
        self._rng = rng
        self.cats = {name: _Categories() for name in ("method", "key", "region", "profiles")}
        self.t0_ns: int | None = None
        self.dropped_retries = 0
        pf = open_trace(path)
        try:
            self.groups = row_group_ranges(pf)
            sizes = [pf.metadata.row_group(g).num_rows for g in range(pf.metadata.num_row_groups)]
            self._first_row = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
            self.file_rows = int(pf.metadata.num_rows)
        finally:
            pf.close()

    def period_s(self) -> float:
        """The recording's period (:mod:`.tiling`): ``period_s`` when given, else from one
        pass over the rows left after the time range and the recorded retries."""
        if self._period_s is None:
            first = last = None
            rows = 0
            for got in self._base_rows(math.inf):
                first = int(got["t"][0]) if first is None else first
                last = int(got["t"][-1])
                rows += len(got["t"])
            self.dropped_retries = 0
            self._period_s = recording_period(first or 0, last or 0, rows, self.speed,
                                              file=self.scaling.file,
                                              field=self.scaling.field)
        return self._period_s

    @property
    def names(self) -> dict[str, list[str]]:
        """Raw code -> name of each dictionary column (first-seen order)."""
        return {name: sorted(cat.codes, key=cat.codes.__getitem__)
                for name, cat in self.cats.items()}

    def max_open_rows(self) -> int:
        """Rows of the largest set of row groups the merge holds at once (overlapping
        time ranges); the whole file when its groups all overlap."""
        return max_overlap_rows(self.groups)

    # the pipeline: groups in time order -> retries dropped -> copies merged
    def chunks(self, until_s: float = math.inf) -> Iterator[dict[str, np.ndarray]]:
        rng = copy.deepcopy(self._rng)
        scaling = self.scaling
        if scaling.uses_period:
            self.period_s()  # its own pass first, if it needs one
        self.dropped_retries = 0
        n_full = math.floor(self.k)
        frac = self.k - n_full
        n_copies = n_full + (1 if frac > 0 else 0)
        if spread_apart(self, n_copies):
            offsets = period_offsets(n_copies, self.period_s(),
                                     copy.deepcopy(scaling.spread_rng))
            yield from merged_copies(self, until_s, offsets, n_full if frac > 0 else -1,
                                     frac, rng)
            return
        base = self.copy_rows(until_s)
        first = next(base, None)
        if first is None:
            self.t0_ns = 0
            return
        self.t0_ns = t0 = int(first["t"][0])
        if scaling.copies_spread == "period":
            offsets = period_offsets(n_copies, self.period_s(),
                                     copy.deepcopy(scaling.spread_rng))
        else:
            offsets = [0.0] + [float(rng.uniform(0.0, SHIFT_RANGE_S))
                               for _ in range(1, n_full)]
            if frac > 0 and n_full >= 1:
                offsets.append(float(rng.uniform(0.0, SHIFT_RANGE_S)))
        thin = n_full if frac > 0 else -1
        pend: dict[str, np.ndarray] | None = None
        ptr = [0] * n_copies

        def pieces():
            yield first
            yield from base

        for got in itertools.chain(pieces(), [None]):
            if got is not None:
                got["b"] = (got["t"] - t0).astype(np.float64) / 1e9 / self.speed
                if "tile_b" in got:  # the loop's shift (.tiling)
                    got["b"] += got.pop("tile_b")
                if thin >= 0:
                    got["thin"] = rng.random(len(got["t"])) < frac
                pend = got if pend is None else {
                    name: np.concatenate((pend[name], arr)) for name, arr in got.items()}
                bound = float(pend["b"][-1]) + self.shift
            else:
                if pend is None:
                    break
                bound = math.inf
            parts_idx, parts_t, parts_copy = [], [], []
            for c in range(n_copies):
                rows = np.arange(ptr[c], len(pend["b"]))
                if c == thin:
                    rows = rows[pend["thin"][ptr[c]:]]
                t_s = (pend["b"][rows] + offsets[c]) + self.shift
                e = int(np.searchsorted(t_s, bound, side="left"))
                parts_idx.append(rows[:e])
                parts_t.append(t_s[:e])
                parts_copy.append(np.full(e, c, dtype=np.int16))
                ptr[c] = int(rows[e]) if e < len(rows) else len(pend["b"])
            idx = np.concatenate(parts_idx)
            t_s = np.concatenate(parts_t)
            cp = np.concatenate(parts_copy)
            if len(parts_idx) > 1:
                order = np.argsort(t_s, kind="stable")
                idx, t_s, cp = idx[order], t_s[order], cp[order]
            if len(idx):
                out = {"t_s": t_s, "copy": cp}
                out.update({name: pend[name][idx] for name in STREAM_COLUMNS[1:]})
                yield out
            lo = min(ptr)
            if lo:
                pend = {name: arr[lo:] for name, arr in pend.items()}
                ptr = [p - lo for p in ptr]
            if bound >= until_s:
                break

    def copy_rows(self, until_s: float, count: bool = True
                  ) -> Iterator[dict[str, np.ndarray]]:
        """The rows one copy replays, before its offset: the base rows, looped when tiled."""
        if self.scaling.tiled:
            return tiled_rows(self, self.scaling, until_s, count)
        return self._base_rows(until_s, count)

    def _rows_in_order(self, read_lo, hi) -> Iterator[dict[str, np.ndarray]]:
        """Trace rows (needed columns) in time order, stable, a merge of row groups."""
        cols = ["time_ns", "api", "method", "key", "region", "items", "profiles",
                "gas_used", "cu"]
        if self.drop_retries:
            cols += ["status", "body_hash"]
        groups = [g for g in self.groups
                  if (read_lo is None or g[2] >= read_lo) and (hi is None or g[1] < hi)]
        groups.sort(key=lambda g: (g[1], g[0]))
        pf = open_trace(self.path)
        try:
            open_: dict[int, dict[str, np.ndarray]] = {}
            for i, (g, _, _, _) in enumerate(groups):
                got = self._read_group(pf, g, cols, read_lo, hi)
                if got is not None:
                    open_[g] = got
                nxt = groups[i + 1][1] if i + 1 < len(groups) else None
                if not open_:
                    continue
                keys = sorted(open_)
                if len(keys) == 1:
                    merged = open_.pop(keys[0])
                else:  # by time, then file position (the in-memory load's stable sort)
                    merged = {name: np.concatenate([open_[k][name] for k in keys])
                              for name in open_[keys[0]]}
                    order = np.lexsort((merged["pos"], merged["t"]))
                    merged = {name: arr[order] for name, arr in merged.items()}
                    open_.clear()
                if nxt is not None:
                    e = int(np.searchsorted(merged["t"], nxt, side="left"))
                    if e < len(merged["t"]):
                        # rows at or past the next group's first time wait for it
                        open_[keys[0]] = {name: arr[e:] for name, arr in merged.items()}
                        merged = {name: arr[:e] for name, arr in merged.items()}
                # in slices: what the later steps build per piece (and the engine holds
                # of each chunk) is then a slice's worth, not a row group's
                for i in range(0, len(merged["t"]), SLICE_ROWS):
                    yield {name: arr[i:i + SLICE_ROWS] for name, arr in merged.items()}
                del merged
        finally:
            pf.close()

    def _read_group(self, pf, g, cols, read_lo, hi) -> dict[str, np.ndarray] | None:
        batch = pf.read_row_group(g, columns=cols)
        t = _np(batch.column("time_ns"), np.int64)
        pos = np.arange(self._first_row[g], self._first_row[g] + len(t), dtype=np.int64)
        if read_lo is not None:
            sel = (t >= read_lo) & (t < hi)
            if not sel.any():
                return None
            batch = batch.filter(pa.array(sel))
            t, pos = t[sel], pos[sel]
        api = batch.column("api").combine_chunks()
        if not pa.types.is_dictionary(api.type):
            api = pc.dictionary_encode(api)
        api_lut = {name: i for i, name in enumerate(APIS)}
        lut = np.array([api_lut[v] for v in api.dictionary.to_pylist()] + [-1], dtype=np.int8)
        got = {"t": t, "pos": pos, "api": lut[_np(pc.fill_null(api.indices, -1), np.int64)],
               "items": _np(pc.fill_null(batch.column("items"), 0), np.int32),
               "gas_used": _np(batch.column("gas_used").cast(pa.float64()), np.float64),
               "cu": _np(batch.column("cu"), np.float64)}
        for name, cat in self.cats.items():
            got[name] = cat.encode(batch.column(name))
        if self.drop_retries:
            throttle_codes = pa.array(LIMIT_STATUSES, pa.int32())
            got["throttled"] = _np(pc.fill_null(pc.is_in(batch.column("status"),
                                                         throttle_codes), False), bool)
            got["hash"], got["has_hash"] = _hash64(batch.column("body_hash"))
        if len(t) > 1 and not np.all(t[1:] >= t[:-1]):
            order = np.argsort(t, kind="stable")
            got = {name: arr[order] for name, arr in got.items()}
        return got

    def _base_rows(self, until_s: float, count: bool = True
                   ) -> Iterator[dict[str, np.ndarray]]:
        """Rows left after the time range and the recorded retries, in time order
        (``count``: add the retries dropped to :attr:`dropped_retries`)."""
        start_ns = min((g[1] for g in self.groups), default=None)
        lo = hi = None
        if start_ns is not None and self.time_range_s is not None:
            lo = start_ns + round(self.time_range_s[0] * 1e9)
            hi = start_ns + round(self.time_range_s[1] * 1e9)
        read_lo = lo - self.window_ns if (lo is not None and self.drop_retries) else lo
        carry: dict[str, np.ndarray] | None = None
        t0 = None
        for got in self._rows_in_order(read_lo, hi):
            keep = got["t"] >= lo if lo is not None else np.ones(len(got["t"]), dtype=bool)
            if self.drop_retries:
                sig = got["hash"]
                no_hash = np.flatnonzero(~got["has_hash"])
                sig[no_hash] = ((got["profiles"][no_hash].astype(np.int64) + 1)
                                .astype(np.uint64) << np.uint64(32)
                                | got["items"][no_hash].astype(np.uint64))
                cur = {"t": got["t"], "key": got["key"], "method": got["method"], "sig": sig,
                       "has_hash": got["has_hash"], "throttled": got["throttled"]}
                both = cur if carry is None else {
                    name: np.concatenate((carry[name], arr)) for name, arr in cur.items()}
                n_carry = len(both["t"]) - len(cur["t"])
                marks = np.zeros(len(both["t"]), dtype=bool)
                if both["throttled"].any():
                    idx = _retry_candidates(both["key"], both["method"], both["sig"],
                                            both["throttled"])
                    retry = np.zeros(len(both["t"]), dtype=bool)
                    retry[idx], marks[idx] = _retry_mask(
                        both["t"][idx], both["key"][idx], both["method"][idx],
                        both["sig"][idx], both["has_hash"][idx], both["throttled"][idx],
                        self.window_ns)
                    retry = retry[n_carry:] & keep
                    if count:
                        self.dropped_retries += int(retry.sum())
                    keep &= ~retry
                # the rows that can still mark a later row (refused, within the window of
                # the last time; without a body hash, only the last row of its group)
                last = both["t"][-1]
                held = marks & (both["t"] >= last - self.window_ns)
                carry = {name: arr[held] for name, arr in both.items()}
            if not keep.all():
                got = {name: arr[keep] for name, arr in got.items()}
            if not len(got["t"]):
                continue
            if t0 is None:
                t0 = int(got["t"][0])
            yield {name: got[name] for name in STREAM_COLUMNS}
            # every later row is at least this late: stop once past until_s
            if (float(got["t"][-1] - t0) / 1e9 / self.speed) + self.shift > until_s:
                return


def row_group_ranges(pf) -> list[tuple[int, int, int, int]]:
    """``(group, first time_ns, last time_ns, rows)`` of each non-empty row group, from
    the Parquet statistics (read from the column where a group has none)."""
    idx = pf.schema_arrow.get_field_index("time_ns")
    out = []
    for g in range(pf.metadata.num_row_groups):
        rg = pf.metadata.row_group(g)
        if rg.num_rows == 0:
            continue
        stats = rg.column(idx).statistics
        if stats is not None and stats.has_min_max:
            lo, hi = int(stats.min), int(stats.max)
        else:
            t = pf.read_row_group(g, columns=["time_ns"]).column(0)
            mm = pc.min_max(t)
            lo, hi = int(mm["min"].as_py()), int(mm["max"].as_py())
        out.append((g, lo, hi, rg.num_rows))
    return out


def max_overlap_rows(groups: list[tuple[int, int, int, int]]) -> int:
    """The most rows of row groups whose time ranges overlap a common instant (what the
    merge of :class:`ReplayStream` holds at once, at most)."""
    events = sorted([(lo, 0, n) for _, lo, _, n in groups]
                    + [(hi, 1, -n) for _, _, hi, n in groups])
    best = cur = 0
    for _, _, n in events:
        cur += n
        best = max(best, cur)
    return best
