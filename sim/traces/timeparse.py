"""Timestamps of trace sources -> ``int64`` nanoseconds since the Unix epoch, UTC, exactly.

Two spellings are accepted wherever a source gives time as text:

* ISO-8601 date-time ``YYYY-MM-DD[T| ]hh:mm[:ss[.fraction]][Z|±hh[:mm]]``; a fraction
  keeps up to 9 digits (further digits are truncated); no offset means UTC. A leap
  second (``:60``) is rejected.
* Epoch seconds as a decimal number ``1714557600`` or ``1714557600.123456789``, parsed
  as a decimal string (no float rounding); digits past the 9th fractional one are
  truncated.

Both are parsed with integer arithmetic (Howard Hinnant's ``days_from_civil``), once for
scalars (HAR, log lines) and once vectorised with Arrow and numpy (CSV, JSONL, Parquet);
the test suite checks the two agree. The vectorised parser first tries Arrow's own casts
(string -> decimal for epoch seconds, string -> timestamp for ISO-8601) on the values
that match the patterns below, which is ten times faster; any chunk those casts refuse
(a day that does not exist, more than 9 fractional digits, zoned and naive times mixed)
goes through the exact regex-and-integer path instead, so the result never depends on
which path ran. Times must fall in [2000-01-01, 2200-01-01): the
range catches seconds given as milliseconds or nanoseconds and the reverse.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NS = 1_000_000_000
MIN_NS = 946_684_800 * NS  # 2000-01-01T00:00:00Z
MAX_NS = 7_258_118_400 * NS  # 2200-01-01T00:00:00Z
TIME_RANGE_TEXT = "between 2000-01-01 and 2200-01-01"

ISO_PATTERN = (
    r"^(?P<Y>[0-9]{4})-(?P<M>0[1-9]|1[0-2])-(?P<D>0[1-9]|[12][0-9]|3[01])[Tt ]"
    r"(?P<h>[01][0-9]|2[0-3]):(?P<m>[0-5][0-9])"
    r"(?::(?P<s>[0-5][0-9])(?:[.,](?P<f>[0-9]{1,9})[0-9]*)?)?"
    r"(?P<z>[Zz]|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?$"
)
EPOCH_PATTERN = r"^(?P<i>[0-9]{1,11})(?:\.(?P<f>[0-9]{0,9})[0-9]*)?$"
_ISO_RE = re.compile(ISO_PATTERN)
_EPOCH_RE = re.compile(EPOCH_PATTERN)


def _days_from_civil(y, m, d):
    """Days since 1970-01-01 of a proleptic Gregorian date (works on ints and arrays)."""
    y = y - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _days_in_month(y, m):
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    table = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)
    return table[m] + ((m == 2) & leap)


def _offset_seconds(z: str) -> int | None:
    if not z or z in "Zz":
        return 0
    sign = -1 if z[0] == "-" else 1
    digits = z[1:].replace(":", "")
    hh = int(digits[:2])
    mm = int(digits[2:4]) if len(digits) > 2 else 0
    if hh > 23 or mm > 59:
        return None
    return sign * (hh * 3600 + mm * 60)


def parse_time_text(text: str) -> int | None:
    """``text`` (ISO-8601 or epoch seconds) as ns since the epoch; None when not a time.

    Surrounding whitespace is ignored; the result is range-checked (see module doc).
    """
    text = text.strip()
    m = _EPOCH_RE.match(text)
    if m:
        frac = (m["f"] or "").ljust(9, "0")
        ns = int(m["i"]) * NS + int(frac)
    else:
        m = _ISO_RE.match(text)
        if not m:
            return None
        y, mo, d = int(m["Y"]), int(m["M"]), int(m["D"])
        h, mi, s = int(m["h"]), int(m["m"]), int(m["s"] or 0)
        if not (1 <= mo <= 12) or d < 1 or d > int(_days_in_month(y, mo)):
            return None
        if h > 23 or mi > 59 or s > 59:
            return None
        off = _offset_seconds(m["z"] or "")
        if off is None:
            return None
        secs = int(_days_from_civil(y, mo, d)) * 86400 + h * 3600 + mi * 60 + s - off
        ns = secs * NS + int((m["f"] or "").ljust(9, "0"))
    return ns if MIN_NS <= ns < MAX_NS else None


def _ints(struct: pa.StructArray, name: str, ok: np.ndarray) -> np.ndarray:
    """A regex group as int64 (0 where the group is empty or the row did not match)."""
    field = pc.struct_field(struct, name)
    field = pc.if_else(pc.equal(pc.utf8_length(field), 0), "0", field)
    field = pc.fill_null(field, "0")
    out = field.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return np.where(ok, out, 0)


def _fraction_ns(struct: pa.StructArray, ok: np.ndarray) -> np.ndarray:
    field = pc.fill_null(pc.struct_field(struct, "f"), "")
    field = pc.utf8_rpad(field, width=9, padding="0")
    return np.where(ok, field.cast(pa.int64()).to_numpy(zero_copy_only=False), 0)


def _matches(values: pa.Array, pattern: str) -> np.ndarray:
    hit = pc.fill_null(pc.match_substring_regex(values, pattern), False)
    return hit.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _np_bools(arr) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _fast_epoch(values: pa.Array) -> np.ndarray | None:
    """Epoch-second strings (all matching EPOCH_PATTERN) -> ns via decimal, or None."""
    try:
        dec = values.cast(pa.decimal128(21, 9))
        scaled = pc.multiply(dec, pa.scalar(10**9, pa.decimal128(10, 0)))
        return scaled.cast(pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _fast_iso(values: pa.Array) -> np.ndarray | None:
    """ISO strings (all matching ISO_PATTERN, T separator, upper-case Z) -> ns, or None."""
    for target in (pa.timestamp("ns", "UTC"), pa.timestamp("ns")):
        try:
            ts = values.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        return ts.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return None


def parse_time_array(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`parse_time_text` over a string array.

    Returns ``(ns, ok)``: int64 ns (0 where not ok) and a bool mask of rows that hold a
    valid, in-range time. Nulls are not ok.
    """
    n = len(values)
    ns = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    if n == 0:
        return ns, ok
    values = pc.utf8_trim_whitespace(values)
    epoch = _matches(values, EPOCH_PATTERN)
    iso = ~epoch & _matches(values, ISO_PATTERN)
    odd = pc.fill_null(pc.or_(pc.match_substring(values, ","), pc.match_substring(values, "z")),
                       True)
    tee = pc.fill_null(pc.equal(pc.utf8_slice_codeunits(values, 10, 11), "T"), False)
    fast_iso = iso & _np_bools(tee) & ~_np_bools(odd)
    if iso.sum() == fast_iso.sum():
        got = [(epoch, _fast_epoch(values.filter(pa.array(epoch))) if epoch.any() else
                np.zeros(0, np.int64)),
               (iso, _fast_iso(values.filter(pa.array(iso))) if iso.any() else
                np.zeros(0, np.int64))]
        if all(v is not None for _, v in got):
            for mask, v in got:
                ns[mask] = v
            ok = (epoch | iso) & (ns >= MIN_NS) & (ns < MAX_NS)
            return np.where(ok, ns, 0), ok
    return _exact_time_array(values)


def _exact_time_array(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    n = len(values)
    ns = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    ep = pc.extract_regex(values, EPOCH_PATTERN)
    ep_ok = ep.is_valid().to_numpy(zero_copy_only=False)
    if ep_ok.any():
        secs = _ints(ep, "i", ep_ok)
        in_range = ep_ok & (secs < MAX_NS // NS)  # also keeps secs * NS inside int64
        ns = np.where(in_range, np.where(in_range, secs, 0) * NS + _fraction_ns(ep, ep_ok), ns)
        ok |= in_range
    rest = ~ep_ok
    if rest.any():
        iso = pc.extract_regex(values, ISO_PATTERN)
        iso_ok = iso.is_valid().to_numpy(zero_copy_only=False) & rest
        if iso_ok.any():
            y, mo, d = (_ints(iso, k, iso_ok) for k in ("Y", "M", "D"))
            h, mi, s = (_ints(iso, k, iso_ok) for k in ("h", "m", "s"))
            mo_safe = np.clip(mo, 1, 12)
            good = (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= _days_in_month(y, mo_safe))
            good &= (h <= 23) & (mi <= 59) & (s <= 59)
            z = pc.fill_null(pc.struct_field(iso, "z"), "").to_numpy(zero_copy_only=False)
            offsets = np.zeros(n, dtype=np.int64)
            for zone in np.unique(z[iso_ok]):
                off = _offset_seconds(str(zone))
                sel = iso_ok & (z == zone)
                if off is None:
                    good &= ~sel
                else:
                    offsets[sel] = off
            secs = _days_from_civil(y, mo_safe, d) * 86400 + h * 3600 + mi * 60 + s - offsets
            good &= (secs >= MIN_NS // NS - 1) & (secs < MAX_NS // NS)  # int64-safe below
            iso_ns = np.where(good, secs, 0) * NS + _fraction_ns(iso, iso_ok)
            iso_ok &= good
            ns = np.where(iso_ok, iso_ns, ns)
            ok |= iso_ok
    ok &= (ns >= MIN_NS) & (ns < MAX_NS)
    return np.where(ok, ns, 0), ok
