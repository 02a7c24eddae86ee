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

from . import strbytes

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


_MONTH_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _month_days(y: int, m: int) -> int:
    """:func:`_days_in_month` of one date, without building arrays."""
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    return _MONTH_DAYS[m] + (m == 2 and leap)


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
        if not (1 <= mo <= 12) or d < 1 or d > _month_days(y, mo):
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
    valid, in-range time. Nulls are not ok. Values in the layout of the first one (most
    sources write every time alike) are read from their bytes by
    :func:`_fixed_layout_times`; the others as described in the module doc.
    """
    if pa.types.is_string(values.type):
        fast = _fixed_layout_times(values)
        if fast is not None:
            return fast
    return _general_time_array(values)


def _general_time_array(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
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


# -- one fixed layout, read from the bytes ------------------------------------------------

def _layout(text: str) -> tuple[str, dict[str, tuple[int, int]], np.ndarray] | None:
    """``(kind, digit fields, digit positions)`` of one whole time value: each field's
    ``(start, end)``, the fraction from its first digit to its last (digits past the
    9th are truncated), ``zh`` / ``zm`` the zone's hours and minutes; None when the value
    is neither spelling."""
    m = _EPOCH_RE.fullmatch(text)
    if m:
        kind, fields = "epoch", {"i": m.span("i")}
        if m["f"] is not None:
            fields["f"] = (m.start("f"), len(text))
    else:
        m = _ISO_RE.fullmatch(text)
        if not m:
            return None
        kind, fields = "iso", {k: m.span(k) for k in "YMDhm"}
        if m["s"] is not None:
            fields["s"] = m.span("s")
        if m["f"] is not None:
            fields["f"] = (m.start("f"), m.start("z") if m["z"] is not None else len(text))
        zone = m["z"] or ""
        if zone not in ("", "Z", "z"):
            start = m.start("z")
            fields["zh"] = (start + 1, start + 3)
            if len(zone) > 3:
                fields["zm"] = (start + len(zone) - 2, start + len(zone))
    digits = np.zeros(len(text), dtype=bool)
    for a, b in fields.values():
        digits[a:b] = True
    return kind, fields, digits


def _fields(cols: np.ndarray, fields: dict[str, tuple[int, int]]) -> dict[str, np.ndarray]:
    """Each digit field's value per row (the fraction in ns: its first nine digits, the
    rest truncated), from ``cols``: one row of bytes per position."""
    cols = cols.astype(np.int32)
    cols -= 48
    out = {}
    for name, (a, b) in fields.items():
        stop = min(b, a + 9) if name == "f" else b
        # int32 holds nine digits; epoch seconds have up to eleven
        acc = np.zeros(cols.shape[1], dtype=np.int32 if stop - a <= 9 else np.int64)
        for p in range(a, stop):
            acc *= 10
            acc += cols[p]
        if name == "f" and stop - a < 9:
            acc *= 10 ** (9 - (stop - a))
        out[name] = acc.astype(np.int64)
    return out


def _layout_values(cols: np.ndarray, kind: str, fields: dict, row0: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(ns, ok)`` of rows in one layout (every digit position a digit, every other byte
    as in ``row0``): the same numbers and checks as :func:`_exact_time_array`."""
    get = _fields(cols, fields)
    frac = get.get("f", 0)
    if kind == "epoch":
        secs = get["i"]
        good = secs < MAX_NS // NS
    else:
        y, mo, d, h, mi = (get[k] for k in "YMDhm")
        s = get.get("s", 0)
        mo_safe = np.clip(mo, 1, 12)
        good = (mo >= 1) & (mo <= 12) & (d >= 1) & (d <= _days_in_month(y, mo_safe))
        good &= (h <= 23) & (mi <= 59) & (s <= 59)
        offset = 0
        if "zh" in fields:
            zh, zm = get["zh"], get.get("zm", 0)
            good &= (zh <= 23) & (zm <= 59)
            sign = -1 if row0[fields["zh"][0] - 1] == ord("-") else 1
            offset = sign * (zh * 3600 + zm * 60)
        secs = _days_from_civil(y, mo_safe, d) * 86400 + h * 3600 + mi * 60 + s - offset
        good &= secs >= MIN_NS // NS - 1  # int64-safe below
        good &= secs < MAX_NS // NS
    ns = np.where(good, secs, 0) * NS + frac
    ok = good & (ns >= MIN_NS) & (ns < MAX_NS)
    return np.where(ok, ns, 0), ok


def _fixed_layout_times(values: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`parse_time_array` for the rows spelled in the layout of the first value
    (same length, digits where it has digits, its other bytes where it has them): a
    layout fixes which regex groups a value has, so those rows are read from the bytes
    with the exact path's arithmetic and checks; the other rows take the exact path.
    None when the first value has no layout of its own."""
    n = len(values)
    valid = strbytes.valid_mask(values)
    if not valid.any():
        return None
    offsets, data = strbytes.parts(values)
    first = int(np.argmax(valid))
    row0 = data[offsets[first]:offsets[first + 1]]
    try:
        layout = _layout(row0.tobytes().decode("ascii"))
    except UnicodeDecodeError:
        return None
    if layout is None:
        return None
    kind, fields, digits = layout
    cand = valid & (np.diff(offsets) == len(row0))
    sub = values if cand.all() else values.filter(pa.array(cand))
    mat = strbytes.fixed_width(sub)
    if mat is None:
        return None
    cols = np.ascontiguousarray(mat.T)  # one row of bytes per position
    shaped = np.ones(len(mat), dtype=bool)
    for p in range(len(row0)):
        if digits[p]:
            shaped &= (cols[p] - np.uint8(48)) < 10
        else:
            shaped &= cols[p] == row0[p]
    ns_sub, ok_sub = _layout_values(cols, kind, fields, row0)
    ns = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(cand)
    ns[rows] = np.where(shaped, ns_sub, 0)
    ok[rows] = shaped & ok_sub
    rest = valid.copy()
    rest[rows[shaped]] = False
    if rest.any():
        ns_rest, ok_rest = _general_time_array(values.filter(pa.array(rest)))
        ns[rest], ok[rest] = ns_rest, ok_rest
    return ns, ok
