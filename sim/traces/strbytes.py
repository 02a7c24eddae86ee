"""Arrow string arrays seen as bytes: cheap, exact checks for the common case.

The validators of :mod:`.tabular` and :mod:`.timeparse` check every value against a
pattern; Arrow's regex kernels cost about 100 ns a value however simple the pattern. The
helpers here answer the questions those patterns ask in the common case (every byte of a
value in a set; every value of one fixed layout) with numpy over the array's data
buffer, a few ns a value. Callers use them only to pick the rows that certainly pass,
and send every other row through the exact path, so results never depend on them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def byte_set(chars: str) -> np.ndarray:
    """A 256-entry mask of the byte values in ``chars`` (ASCII)."""
    table = np.zeros(256, dtype=bool)
    table[np.frombuffer(chars.encode("ascii"), dtype=np.uint8)] = True
    return table


DIGITS = byte_set("0123456789")
LOWER_HEX = byte_set("0123456789abcdef")


def parts(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)``: the ``n + 1`` value offsets (int64, into ``data``) and the
    data buffer (uint8) of a ``string`` or ``binary`` array."""
    if not (pa.types.is_string(values.type) or pa.types.is_binary(values.type)):
        raise TypeError("expected a string or binary array")
    bufs = values.buffers()
    n = len(values)
    offsets = np.frombuffer(bufs[1], dtype=np.int32)[values.offset:values.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and n else \
        np.zeros(0, dtype=np.uint8)
    return offsets.astype(np.int64), data


def valid_mask(values: pa.Array) -> np.ndarray:
    """Which values are not null (numpy bool)."""
    if values.null_count == 0:
        return np.ones(len(values), dtype=bool)
    return values.is_valid().to_numpy(zero_copy_only=False)


def all_bytes_in(values: pa.Array, table: np.ndarray, min_len: int = 1,
                 max_len: int | None = None) -> np.ndarray:
    """Per value: not null, ``min_len`` <= byte length <= ``max_len``, and every byte in
    ``table`` (see :func:`byte_set`)."""
    offsets, data = parts(values)
    lengths = np.diff(offsets)
    ok = valid_mask(values) & (lengths >= min_len)
    if max_len is not None:
        ok &= lengths <= max_len
    lo, hi = int(offsets[0]), int(offsets[-1])
    bad = np.flatnonzero(~table[data[lo:hi]])
    if len(bad):
        rows = np.searchsorted(offsets, bad + lo, side="right") - 1
        ok[rows] = False
    return ok


def fixed_width(values: pa.Array) -> np.ndarray | None:
    """The values as an ``(n, width)`` uint8 matrix (a view) when none is null and all
    have the same byte length, else None."""
    n = len(values)
    if n == 0 or values.null_count:
        return None
    offsets, data = parts(values)
    width = int(offsets[1] - offsets[0])
    if width == 0 or int(offsets[-1] - offsets[0]) != n * width \
            or not (np.diff(offsets) == width).all():
        return None
    return data[offsets[0]:offsets[-1]].reshape(n, width)


def is_ascii(values: pa.Array) -> bool:
    """Whether every byte of the values is ASCII (so a binary array is valid UTF-8)."""
    offsets, data = parts(values)
    used = data[offsets[0]:offsets[-1]]
    return not len(used) or int(used.max()) < 0x80


def edge_may_be_space(values: pa.Array) -> bool:
    """Whether a value may start or end with white space: its first or last byte is a
    control byte, a space or not ASCII (every Unicode space is one of those), so when
    this is False trimming changes nothing."""
    offsets, data = parts(values)
    if len(offsets) < 2 or not len(data):
        return False
    nonempty = offsets[1:] > offsets[:-1]
    first = _SPACEISH[data[np.minimum(offsets[:-1], len(data) - 1)]]
    last = _SPACEISH[data[np.maximum(offsets[1:] - 1, 0)]]
    return bool(((first | last) & nonempty).any())


_SPACEISH = np.zeros(256, dtype=bool)
_SPACEISH[:0x21] = True
_SPACEISH[0x7F:] = True
